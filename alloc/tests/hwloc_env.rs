//! hwloc's own variables (`HWLOC_SYNTHETIC`, `HWLOC_XMLFILE`, ...) make it describe another
//! topology when asked for the machine's: numatask refuses that for the real machine, naming
//! the variable, instead of labelling the other topology `system`. Alone in its test binary:
//! it sets the variables.

use std::time::{Duration, Instant};

use numatask_alloc::{AllocError, Preset, Topology};

#[path = "common/temp_dir.rs"]
mod temp_dir;
use temp_dir::TempDir;

#[test]
fn hwloc_variables_naming_another_topology_are_refused_for_the_real_machine() {
    // SAFETY: the only test of this binary; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var("HWLOC_SYNTHETIC", "numa:600 core:1 pu:1") };
    // An earlier variable hwloc cannot use (it moves on to the next) does not hide it.
    // SAFETY: as above.
    unsafe { std::env::set_var("HWLOC_FSROOT", "/nonexistent-numatask-fsroot") };
    // Too large to simulate: refused before hwloc spends minutes on it.
    let started = Instant::now();
    let err = Topology::system().unwrap_err();
    assert!(matches!(err, AllocError::InvalidTopology { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("HWLOC_SYNTHETIC='numa:600 core:1 pu:1' is set") && text.contains("600"),
        "{text}"
    );
    // A topology asked for explicitly is not affected, but pinning cannot find the real
    // machine (whose lookup skips the oversized description at once), and says why.
    let preset = Topology::preset(Preset::Opteron6172).unwrap();
    assert_eq!(preset.num_nodes(), 8);
    let err = preset.pin_current_thread(0).unwrap_err().to_string();
    assert!(
        err.contains("HWLOC_SYNTHETIC='numa:600 core:1 pu:1'") && err.contains("HWLOC_FSROOT"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "not built by hwloc"
    );
    // SAFETY: as above.
    unsafe { std::env::remove_var("HWLOC_FSROOT") };

    // SAFETY: as above.
    unsafe { std::env::set_var("HWLOC_SYNTHETIC", "numa:2 core:1 pu:1") };
    let text = Topology::system().unwrap_err().to_string();
    assert!(
        text.contains("HWLOC_SYNTHETIC='numa:2 core:1 pu:1' is set")
            && text.contains("NUMATASK_TOPOLOGY=synthetic:"),
        "{text}"
    );

    // An empty HWLOC_SYNTHETIC, which hwloc passes over: the file it read is named.
    // SAFETY: as above.
    unsafe { std::env::set_var("HWLOC_SYNTHETIC", "") };
    let dir = TempDir::new("hwloc-env");
    let xml = dir.join("preset.xml");
    preset.export_xml(&xml).unwrap();
    // SAFETY: as above.
    unsafe { std::env::set_var("HWLOC_XMLFILE", &xml) };
    let text = Topology::system().unwrap_err().to_string();
    assert!(text.contains("HWLOC_XMLFILE='"), "{text}");
    assert!(!text.contains("HWLOC_SYNTHETIC"), "{text}");
}
