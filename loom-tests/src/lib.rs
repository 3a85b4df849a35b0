//! Model checks of the runtime's concurrent data structures (see `tests/`).
