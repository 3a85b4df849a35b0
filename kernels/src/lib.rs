//! The OpenCL-model kernel executor.
