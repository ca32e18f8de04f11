// Placeholder replaced by the C API implementation.
