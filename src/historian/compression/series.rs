//! The compressed series of one server: a filter per topic whose tag has compression, kept in
//! memory. The state stays bounded by the compressed tags: a series ends (and what it holds is
//! stored) when its tag's owner or settings change, when the tag stops being compressed or
//! historized, or is deleted ([`Compressor::retain`]), and all of them at shutdown
//! ([`Compressor::close`]).

use super::{Compression, Sample, SeriesFilter};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// One filter per compressed topic; `T` is the point the caller stores.
pub struct Compressor<T> {
    inner: Mutex<Inner<T>>,
}

struct Inner<T> {
    /// By topic: a topic has one owner, whose domain the series remembers.
    series: HashMap<String, Series<T>>,
    /// After [`Compressor::close`], every point is stored as it comes.
    closed: bool,
}

struct Series<T> {
    domain: Arc<str>,
    filter: SeriesFilter<T>,
}

impl<T> Series<T> {
    fn matches(&self, domain: &str, settings: &Compression) -> bool {
        &*self.domain == domain && self.filter.settings() == settings
    }
}

impl<T> Default for Compressor<T> {
    fn default() -> Compressor<T> {
        Compressor {
            inner: Mutex::new(Inner {
                series: HashMap::new(),
                closed: false,
            }),
        }
    }
}

impl<T> Compressor<T> {
    /// Feeds one point of `topic`, a tag of `domain` compressed with `settings`; the points to
    /// store now go to `out`, oldest first. A series whose owner or settings changed since its
    /// last point first stores what it held, then starts afresh.
    pub fn push(
        &self,
        domain: &Arc<str>,
        topic: &str,
        settings: &Compression,
        sample: Sample,
        item: T,
        out: &mut Vec<T>,
    ) {
        let mut inner = self.lock();
        if inner.closed {
            out.push(item);
            return;
        }
        if let Some(series) = inner.series.get_mut(topic) {
            if !series.matches(domain, settings) {
                series.filter.finish(out);
                *series = Series {
                    domain: domain.clone(),
                    filter: SeriesFilter::new(settings.clone()),
                };
            }
            series.filter.push(sample, item, out);
            return;
        }
        let mut filter = SeriesFilter::new(settings.clone());
        filter.push(sample, item, out);
        inner.series.insert(
            topic.to_string(),
            Series {
                domain: domain.clone(),
                filter,
            },
        );
    }

    /// Ends every series for which `keep(topic, domain, settings)` is false; what they held
    /// goes to `out`.
    pub fn retain(&self, keep: impl Fn(&str, &str, &Compression) -> bool, out: &mut Vec<T>) {
        self.lock().series.retain(|topic, series| {
            let kept = keep(topic, &series.domain, series.filter.settings());
            if !kept {
                series.filter.finish(out);
            }
            kept
        });
    }

    /// Ends every series (what they held goes to `out`); later points are stored as they come.
    pub fn close(&self, out: &mut Vec<T>) {
        let mut inner = self.lock();
        inner.closed = true;
        for (_, mut series) in inner.series.drain() {
            series.filter.finish(out);
        }
    }

    /// The series kept in memory.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().series.len()
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        // A panic while holding it leaves at worst one series' state half-updated.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}
