//! `pmx_tui::top::Session` on the real kernel: a system-wide cpu-clock
//! session while this test spins; the rows held stay under the cap the
//! options set however many there are, zero forgets, and stopping
//! returns the session's summary.

use pmx_record::SampleRate;
use pmx_tui::top::{Aging, Session, TopOptions};
use std::time::{Duration, Instant};

#[test]
fn held_rows_stay_under_the_cap_and_zero_forgets() {
    let rate = SampleRate::Frequency(1000);
    let (event, _) = pmx_record::default_event(rate);
    let cpus = pmx_count::stat::online_cpus();
    let mut opts = TopOptions::new(vec![event], pmx_count::stat::Scope::Cpus(cpus), rate);
    opts.max_rows = 3;
    opts.record.mmap_pages = 16;
    let mut session = Session::start(&opts, false).expect("session");
    let t = Instant::now();
    let mut seen = 0;
    let mut x = 1u64;
    while t.elapsed() < Duration::from_secs(60) {
        let until = Instant::now() + Duration::from_millis(300);
        while Instant::now() < until {
            x = std::hint::black_box(x.wrapping_mul(3).wrapping_add(1));
        }
        let f = session.frame(Aging::Keep).expect("frame");
        assert!(f.header.held_rows <= 3, "{} rows held", f.header.held_rows);
        seen = f.header.samples;
        if seen > 100 && f.profile.events[0].rows.len() >= 2 {
            break;
        }
    }
    assert!(seen > 100, "{seen} samples in a minute of spinning");
    assert!(session.frame(Aging::Zero).unwrap().header.held_rows == 0);
    let summary = session.stop().expect("stop").expect("summary");
    assert!(summary.samples() >= seen);
}
