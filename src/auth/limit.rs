//! Limits per caller: a token bucket per caller (every request or call it
//! makes) and one per (caller, tool), each refilled at its rate per minute
//! and as large as that rate. The map of buckets is bounded: past
//! `[auth.limits] callers` entries, buckets that have refilled (idle
//! callers, whom a fresh bucket treats alike) are dropped, then the least
//! recently used.

use crate::policy::CallLimits;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// A call over its limit: which limit, and when a call would pass again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    /// `"caller"` or `"tool"`.
    pub scope: &'static str,
    /// The limit, in calls per minute.
    pub per_minute: u32,
    /// Whole seconds until one call would pass (at least 1).
    pub retry_after_secs: u64,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of one `[auth.limits]`.
#[derive(Debug)]
pub struct Limiter {
    limits: CallLimits,
    callers: Mutex<HashMap<String, Bucket>>,
    tools: Mutex<HashMap<(String, String), Bucket>>,
}

impl Limiter {
    /// Empty buckets for `limits`.
    pub fn new(limits: CallLimits) -> Self {
        Self {
            limits,
            callers: Mutex::new(HashMap::new()),
            tools: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request of `caller` at `now`.
    ///
    /// # Errors
    /// The limit it is over.
    pub fn request(&self, caller: &str, now: Instant) -> Result<(), Limited> {
        let Some(rate) = self.limits.calls_per_minute else {
            return Ok(());
        };
        take(
            &self.callers,
            caller.to_string(),
            rate,
            self.cap(),
            now,
            "caller",
        )
    }

    /// Takes one call of `caller` to `tool` at `now`.
    ///
    /// # Errors
    /// The limit it is over.
    pub fn tool_call(&self, caller: &str, tool: &str, now: Instant) -> Result<(), Limited> {
        let Some(rate) = self.limits.tool_calls_per_minute else {
            return Ok(());
        };
        let key = (caller.to_string(), tool.to_string());
        take(&self.tools, key, rate, self.cap(), now, "tool")
    }

    /// How many buckets each map holds now.
    pub fn len(&self) -> (usize, usize) {
        (
            self.callers.lock().unwrap_or_else(|e| e.into_inner()).len(),
            self.tools.lock().unwrap_or_else(|e| e.into_inner()).len(),
        )
    }

    fn cap(&self) -> usize {
        usize::try_from(self.limits.callers).unwrap_or(usize::MAX)
    }
}

fn take<K: std::hash::Hash + Eq + Clone>(
    map: &Mutex<HashMap<K, Bucket>>,
    key: K,
    per_minute: u32,
    cap: usize,
    now: Instant,
    scope: &'static str,
) -> Result<(), Limited> {
    let size = f64::from(per_minute);
    let per_sec = size / 60.0;
    let refilled = |b: &Bucket| {
        (b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * per_sec).min(size)
    };
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    if !map.contains_key(&key) && map.len() >= cap {
        map.retain(|_, b| refilled(b) < size);
        if map.len() >= cap
            && let Some(oldest) = map.iter().min_by_key(|(_, b)| b.at).map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
    }
    let bucket = map.entry(key).or_insert(Bucket {
        tokens: size,
        at: now,
    });
    let tokens = refilled(bucket);
    if tokens >= 1.0 {
        *bucket = Bucket {
            tokens: tokens - 1.0,
            at: now,
        };
        return Ok(());
    }
    *bucket = Bucket { tokens, at: now };
    // Whole seconds, rounded up, so a call sent then passes.
    let wait = ((1.0 - tokens) / per_sec).ceil().max(1.0);
    Err(Limited {
        scope,
        per_minute,
        retry_after_secs: wait as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limiter(calls: u32, tools: u32, callers: u32) -> Limiter {
        Limiter::new(CallLimits {
            calls_per_minute: Some(calls),
            tool_calls_per_minute: Some(tools),
            callers,
        })
    }

    #[test]
    fn a_bucket_empties_and_refills() {
        let l = limiter(2, 1, 10);
        let t = Instant::now();
        assert!(l.request("a", t).is_ok());
        assert!(l.request("a", t).is_ok());
        let over = l.request("a", t).unwrap_err();
        assert_eq!(
            (over.scope, over.per_minute, over.retry_after_secs),
            ("caller", 2, 30)
        );
        assert!(
            l.request("b", t).is_ok(),
            "another caller has its own bucket"
        );
        assert!(l.request("a", t + Duration::from_secs(30)).is_ok());
        assert!(l.tool_call("a", "x", t).is_ok());
        assert_eq!(l.tool_call("a", "x", t).unwrap_err().scope, "tool");
        assert!(l.tool_call("a", "y", t).is_ok());
    }

    #[test]
    fn the_map_stays_bounded() {
        let l = limiter(5, 5, 3);
        let t = Instant::now();
        for i in 0..100 {
            let _ = l.request(&format!("c{i}"), t + Duration::from_millis(i));
        }
        assert!(l.len().0 <= 3);
    }
}
