#![allow(missing_docs, clippy::unwrap_used)]
use looprail_compaction::TiktokenCounter;
use looprail_loop_core::context::TokenCounter;
fn main() {
    let t0 = std::time::Instant::now();
    let counter = TiktokenCounter::default();
    counter.count_text("warm");
    eprintln!("init {:?}", t0.elapsed());
    let data = std::fs::read("/tmp/texts.bin").unwrap();
    let mut texts = Vec::new();
    let mut at = 0;
    let limit: usize = std::env::var("LIMIT").map_or(usize::MAX, |l| l.parse().unwrap());
    while at < data.len().min(limit) {
        let n = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        texts.push(std::str::from_utf8(&data[at + 4..at + 4 + n]).unwrap());
        at += 4 + n;
    }
    if std::env::var("CHECK").is_ok() {
        let reference = tiktoken_rs::cl100k_base_singleton();
        for (i, t) in texts.iter().enumerate() {
            let ours = counter.count_text(t);
            let theirs = reference.encode_ordinary(t).len() as u64;
            if ours != theirs {
                eprintln!("text {i}: ours {ours} theirs {theirs}: {:?}", &t[..t.len().min(300)]);
                // bisect by lines
                let lines: Vec<&str> = t.split_inclusive('\n').collect();
                let mut lo = 0;
                let mut hi = lines.len();
                // find smallest prefix that differs
                while hi - lo > 1 {
                    let mid = (lo + hi) / 2;
                    let p: String = lines[..mid].concat();
                    if counter.count_text(&p) != reference.encode_ordinary(&p).len() as u64 {
                        hi = mid
                    } else {
                        lo = mid
                    }
                }
                let p: String = lines[..hi].concat();
                // then smallest suffix start
                let mut s0 = 0;
                for st in 0..hi {
                    let q: String = lines[st..hi].concat();
                    if counter.count_text(&q) != reference.encode_ordinary(&q).len() as u64 {
                        s0 = st
                    } else {
                        break;
                    }
                }
                let q: String = lines[s0..hi].concat();
                eprintln!("minimal-ish ({} bytes): {:?}", q.len(), q);
                let _ = p;
                std::process::exit(1);
            }
        }
        eprintln!("all {} texts equal", texts.len());
        return;
    }
    if std::env::var("PIECES").is_ok() {
        pieces_mode();
        return;
    }
    if std::env::var("STATS").is_ok() {
        let _ = texts.iter().map(|t| counter.count_text(t)).sum::<u64>();
        stats();
        return;
    }
    for _ in 0..std::env::args().nth(1).map_or(3, |n| n.parse().unwrap()) {
        let t = std::time::Instant::now();
        let total: u64 = if std::env::var("FRESH").is_ok() {
            std::thread::scope(|s| {
                s.spawn(|| texts.iter().map(|t| counter.count_text(t)).sum()).join().unwrap()
            })
        } else {
            texts.iter().map(|t| counter.count_text(t)).sum()
        };
        let e = t.elapsed();
        eprintln!("{} tokens in {:?}: {:.0} MB/s", total, e, data.len() as f64 / e.as_secs_f64() / 1e6);
    }
}
fn stats() {}
#[allow(dead_code)]
pub fn pieces_mode() {
    let counter = TiktokenCounter::default();
    counter.count_text("warm");
    let data = std::fs::read("/tmp/pieces.bin").unwrap();
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let n = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        if let Ok(p) = std::str::from_utf8(&data[at + 4..at + 4 + n]) {
            pieces.push(p);
        }
        at += 4 + n;
    }
    let groups = if std::env::var("LONGONLY").is_ok() {
        vec![(129, usize::MAX)]
    } else {
        vec![(0usize, 15usize), (16, 128), (129, usize::MAX)]
    };
    for (lo, hi) in groups {
        let set: Vec<&str> = pieces.iter().copied().filter(|p| p.len() >= lo && p.len() <= hi).collect();
        let t = std::time::Instant::now();
        let total: u64 = std::thread::scope(|s| {
            s.spawn(|| set.iter().map(|p| counter.count_text(p)).sum()).join().unwrap()
        });
        eprintln!("{lo}..{hi}: {} pieces, {total} tokens, {:?}", set.len(), t.elapsed());
    }
}
