//! Work shared out over scoped threads, for the few places where one run
//! holds enough independent items to keep every core busy (counting
//! definitions, parsing the entries of a large tools file). Threads take
//! items one at a time from a shared counter, so a few large ones do not
//! leave a core idle; results come back in item order, so the output is
//! the same on any number of threads.

/// `f(state, i)` for every `i` below `n`, in order, on at most `threads`
/// threads (the calling one among them), each with its own `state()`. A
/// thread that cannot be started leaves its share to the others. A panic
/// in `f` is passed on to the caller.
pub(crate) fn map_indices<S, T: Send>(
    n: usize,
    threads: usize,
    state: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) -> T + Sync,
) -> Vec<T> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut state = state();
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if i >= n {
                break;
            }
            done.push((i, f(&mut state, i)));
        }
        done
    };
    if threads < 2 || n < 2 {
        return work().into_iter().map(|(_, t)| t).collect();
    }
    let mut done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads.min(n))
            .filter_map(|_| {
                std::thread::Builder::new()
                    // The main thread's stack: what runs here (a parser, a
                    // recursive writer) was written for it.
                    .stack_size(STACK)
                    .spawn_scoped(scope, work)
                    .ok()
            })
            .collect();
        let mut done = work();
        for helper in helpers {
            done.extend(
                helper
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        done
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, t)| t).collect()
}

/// Stack for each helper thread: the 8 MiB a Linux main thread has.
const STACK: usize = 8 << 20;

/// The cores this process may use (1 when that cannot be told).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_order_whatever_the_threads() {
        let squares: Vec<usize> = (0..1000).map(|i| i * i).collect();
        for threads in [0, 1, 2, 3, 8, 2000] {
            let got = map_indices(1000, threads, || (), |(), i| i * i);
            assert_eq!(got, squares, "{threads} threads");
        }
        assert!(map_indices(0, 4, || (), |(), i| i).is_empty());
    }

    #[test]
    fn each_thread_keeps_its_own_state() {
        // Each thread counts the items it took; the counts sum to n.
        let seen = map_indices(
            500,
            2,
            || 0usize,
            |taken, _| {
                *taken += 1;
                *taken
            },
        );
        assert_eq!(seen.len(), 500);
        assert!(seen.iter().all(|&k| (1..=500).contains(&k)));
    }
}
