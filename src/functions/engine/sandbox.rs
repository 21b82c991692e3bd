//! What fences a run in: the capped allocator behind the memory limit, and the module loader
//! that resolves imports to the bundle's own files only. Both live inside a runtime that may
//! move between threads, hence `Arc`s and atomics.

use super::runtime::Cells;
use super::*;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

// ---- memory ------------------------------------------------------------------------------

/// The Rust allocator with a cap: past the run's limit (`0`: none) it refuses and says so in
/// `refused`, which tells an out-of-memory failure from a script that throws `null` (what
/// QuickJS throws when it cannot even allocate the error). What it holds is kept in `used`,
/// which is what a warm context costs.
pub(super) struct CappedAllocator {
    pub(super) cells: Arc<Cells>,
}

impl CappedAllocator {
    fn admit(&mut self, more: usize) -> bool {
        let limit = self.cells.limit.load(Relaxed);
        let used = self.cells.used.load(Relaxed);
        let fits = limit == 0 || used.saturating_add(more) <= limit;
        if !fits {
            self.cells.refused.store(true, Relaxed);
        }
        fits
    }

    fn track(&mut self, ptr: *mut u8) -> *mut u8 {
        if !ptr.is_null() {
            // SAFETY: `ptr` was just allocated by `RustAllocator`.
            let size = unsafe { RustAllocator::usable_size(ptr) };
            self.cells.used.fetch_add(size, Relaxed);
        }
        ptr
    }

    fn release(&mut self, size: usize) {
        let used = self.cells.used.load(Relaxed);
        self.cells.used.store(used.saturating_sub(size), Relaxed);
    }
}

// SAFETY: every allocation is made, sized and freed by `RustAllocator`, which meets the
// trait's contract; this wrapper only counts bytes and may return null instead.
unsafe impl Allocator for CappedAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.admit(size) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        self.track(ptr)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if !self.admit(total) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        self.track(ptr)
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        self.release(RustAllocator::usable_size(ptr));
        RustAllocator.dealloc(ptr);
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        let old_size = RustAllocator::usable_size(ptr);
        if new_size > old_size && !self.admit(new_size - old_size) {
            return std::ptr::null_mut();
        }
        let new = RustAllocator.realloc(ptr, new_size);
        if !new.is_null() {
            self.release(old_size);
            self.cells
                .used
                .fetch_add(RustAllocator::usable_size(new), Relaxed);
        }
        new
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        RustAllocator::usable_size(ptr)
    }
}

// ---- module loading ----------------------------------------------------------------------

/// Resolver and loader over the bundle's files only.
#[derive(Clone)]
pub(super) struct Bundle {
    pub(super) files: Arc<BTreeMap<String, String>>,
    /// The files loaded so far.
    pub(super) loaded: Arc<Mutex<BTreeSet<String>>>,
}

impl Bundle {
    pub(super) fn new(modules: &BTreeMap<String, String>) -> Bundle {
        let files = modules
            .iter()
            .filter_map(|(name, code)| Some((normalize("", name)?, code.clone())))
            .collect();
        Bundle {
            files: Arc::new(files),
            loaded: Arc::default(),
        }
    }

    /// The bundle file `name` names when imported from `base`.
    fn resolve(&self, base: &str, name: &str) -> Option<String> {
        let dir = base.rsplit_once('/').map_or("", |(dir, _)| dir);
        let path = normalize(dir, name)?;
        [path.clone(), format!("{path}.js"), format!("{path}.mjs")]
            .into_iter()
            .find(|candidate| candidate == ENTRY || self.files.contains_key(candidate))
    }
}

/// `name` relative to folder `dir` (when it starts with `./` or `../`), as a path from the
/// bundle root without `.`/`..`; `None` when it climbs above the root.
pub(super) fn normalize(dir: &str, name: &str) -> Option<String> {
    let relative = name.starts_with("./") || name.starts_with("../");
    let mut parts: Vec<&str> = Vec::new();
    let start = if relative { dir } else { "" };
    for part in start.split('/').chain(name.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        None
    } else {
        Some(parts.join("/"))
    }
}

impl Resolver for Bundle {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        Bundle::resolve(self, base, name).ok_or_else(|| {
            rquickjs::Error::new_resolving_message(
                base,
                name,
                "only the files of the function's bundle can be imported",
            )
        })
    }
}

impl Loader for Bundle {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js>> {
        match self.files.get(name) {
            Some(code) => {
                lock(&self.loaded).insert(name.to_string());
                Module::declare(ctx.clone(), name, code.as_str())
            }
            None => Err(rquickjs::Error::new_loading(name)),
        }
    }
}

/// A mutex's contents, also after a panic elsewhere (the data is a plain set).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
