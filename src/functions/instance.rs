//! A deployed process version: what its warm runtimes (a JavaScript context, a Python worker)
//! are kept for. Each deployment makes a new one, so a redeploy, a disable or a delete starts
//! from fresh state even when the code did not change; dropping it (when the deployment and
//! every run of it are gone) drops its runtimes.

use std::sync::atomic::{AtomicU64, Ordering};

pub struct Instance {
    id: u64,
}

impl Instance {
    /// A new instance whose runtimes are kept between its runs.
    pub fn new() -> Instance {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        super::engine::register(id);
        super::python::register(id);
        Instance { id }
    }

    pub fn id(&self) -> u64 {
        self.id
    }
}

impl Default for Instance {
    fn default() -> Instance {
        Instance::new()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        super::engine::retire(self.id);
        super::python::retire(self.id);
    }
}
