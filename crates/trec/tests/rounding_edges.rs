//! Values that sit exactly on a printing edge of `%6.4f`, on constructed qrels and runs.
//!
//! Two kinds of edge:
//! - a decimal edge (`0.00225`, `1/160 = 0.00625`): not representable, so the printed digit is
//!   decided by the last bit of the double, and thus by the order of the operations. trec_eval's
//!   order (its `m_*.c` files, in `double`) is the one to follow: the algebraically equal
//!   alternatives noted beside each case print the other digit;
//! - a binary tie (odd multiples of `1/32`, `0.03125`): exactly half-way, which `printf` rounds
//!   to even (`0.0312`, `0.0938`).
//!
//! Expected values are trec_eval's: computed by hand from its C sources and checked against its
//! own code through pytrec_eval when the reference Python is available
//! ([`edges_match_pytrec_eval_bit_for_bit`]).

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use common::trec;

/// One constructed topic: `num_rel` relevant documents in the qrels, `ret` retrieved, the
/// relevant ones at `rel_ranks` (1-based), unjudged documents at `unjudged_ranks` and judged
/// non-relevant documents everywhere else.
struct Topic {
    id: &'static str,
    num_rel: usize,
    ret: usize,
    rel_ranks: &'static [usize],
    unjudged_ranks: &'static [usize],
}

const fn topic(id: &'static str, num_rel: usize, ret: usize, rel_ranks: &'static [usize]) -> Topic {
    Topic {
        id,
        num_rel,
        ret,
        rel_ranks,
        unjudged_ranks: &[],
    }
}

/// Writes `name.qrels` and `name.run` for `topics`; scores fall strictly with rank.
fn write_case(dir: &Path, name: &str, topics: &[Topic]) -> (PathBuf, PathBuf) {
    let (mut qrels, mut run) = (String::new(), String::new());
    for t in topics {
        for j in 1..=t.num_rel {
            let _ = writeln!(qrels, "{} 0 {}-r{j} 1", t.id, t.id);
        }
        let mut next_rel = 1;
        for rank in 1..=t.ret {
            let doc = if t.rel_ranks.contains(&rank) {
                next_rel += 1;
                format!("{}-r{}", t.id, next_rel - 1)
            } else if t.unjudged_ranks.contains(&rank) {
                format!("{}-u{rank}", t.id)
            } else {
                let _ = writeln!(qrels, "{} 0 {}-n{rank} 0", t.id, t.id);
                format!("{}-n{rank}", t.id)
            };
            let _ = writeln!(run, "{} Q0 {doc} {rank} {} edges", t.id, t.ret - rank + 1);
        }
    }
    let q = dir.join(format!("{name}.qrels"));
    let r = dir.join(format!("{name}.run"));
    std::fs::write(&q, qrels).expect("write qrels");
    std::fs::write(&r, run).expect("write run");
    (q, r)
}

const SET_MAP: &[Topic] = &[topic("1", 4, 1000, &[1, 2, 3])];
const SET_F: &[Topic] = &[
    topic("1", 4, 316, &[1]),
    topic("2", 3, 317, &[1, 2, 3]),
    topic("3", 6, 58, &[1, 2, 3, 4, 5]),
];
const MAP: &[Topic] = &[topic("1", 8, 6, &[2, 3, 4, 5, 6])];
const SINGLE_DIVISION: &[Topic] = &[
    Topic {
        id: "a",
        num_rel: 160,
        ret: 160,
        rel_ranks: &[160],
        unjudged_ranks: &[1],
    },
    Topic {
        id: "b",
        num_rel: 160,
        ret: 160,
        rel_ranks: &[158, 159, 160],
        unjudged_ranks: &[1, 2, 3],
    },
    topic("c", 32, 32, &[32]),
    topic("d", 32, 32, &[30, 31, 32]),
    topic("e", 32, 1, &[1]),
];
const SUMMARY: &[Topic] = &[
    topic("1", 1, 10, &[1]),
    topic(
        "2",
        34,
        40,
        &[
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
            25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
        ],
    ),
    topic("3", 5, 32, &[1, 2, 3, 4, 5]),
];

/// Every constructed case, by name.
const CASES: &[(&str, &[Topic])] = &[
    ("set_map", SET_MAP),
    ("set_f", SET_F),
    ("map", MAP),
    ("single_division", SINGLE_DIVISION),
    ("summary", SUMMARY),
];

/// Runs `oloproof trec -q` with `measures` on a case and returns its output.
fn evaluate(dir: &Path, name: &str, measures: &[&str]) -> String {
    let topics = CASES
        .iter()
        .find(|c| c.0 == name)
        .map(|c| c.1)
        .expect("case");
    let (q, r) = write_case(dir, name, topics);
    let mut args = vec!["-q".to_string()];
    for m in measures {
        args.push("-m".into());
        args.push((*m).into());
    }
    args.push(q.to_string_lossy().into_owned());
    args.push(r.to_string_lossy().into_owned());
    trec(&args).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Checks `(measure, topic, printed value)` lines of `out`; reports every mismatch at once.
fn check(name: &str, out: &str, want: &[(&str, &str, &str)]) {
    let mut wrong = String::new();
    for (measure, topic, value) in want {
        let prefix = format!("{measure:<22}\t{topic}\t");
        match out.lines().find_map(|l| l.strip_prefix(&prefix)) {
            Some(got) if got == *value => {}
            got => {
                let _ = writeln!(
                    wrong,
                    "{name}: {measure} topic {topic}: got {got:?}, trec_eval prints {value}"
                );
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong}\n{out}");
}

/// `m_set_map.c`: `(rr * rr) / (ret * rel)`. 3 of 1,000 retrieved, 4 relevant: 9 / 4000 is
/// stored below 0.00225; `(3 / 1000) * (3 / 4)` lands above it and prints 0.0023.
#[test]
fn set_map_divides_the_squared_count_once() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = evaluate(tmp.path(), "set_map", &["set_map"]);
    check(
        "set_map",
        &out,
        &[("set_map", "1", "0.0022"), ("set_map", "all", "0.0022")],
    );
}

/// `m_set_F.c`: `P = rr / ret`, `R = rr / rel`, `(x + 1) * P * R / (x * P + R)`, left to
/// right. The equal `2 * rr / (ret + rel)` prints 0.0063, 0.0187 and 0.1562.
#[test]
fn set_f_follows_trec_evals_operation_order() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = evaluate(tmp.path(), "set_f", &["set_F"]);
    check(
        "set_F",
        &out,
        &[
            ("set_F", "1", "0.0062"),
            ("set_F", "2", "0.0188"),
            ("set_F", "3", "0.1563"),
        ],
    );
}

/// `m_map.c` / `m_map_cut.c`: precisions `rel_so_far / rank` summed in rank order, then one
/// division by `num_rel`. Relevant at ranks 2–6 of 6, 8 relevant: exactly 0.44375, which the
/// summed doubles leave just above (0.4438); the exact fraction rounded once prints 0.4437.
#[test]
fn map_sums_precisions_in_rank_order() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = evaluate(tmp.path(), "map", &["map", "map_cut.5,10"]);
    check(
        "map",
        &out,
        &[("map", "1", "0.4438"), ("map_cut_10", "1", "0.4438")],
    );
}

/// One division of two counts, as trec_eval does it (`(double) a / (double) b`, never a
/// reciprocal or a ratio of ratios): `m_set_P.c`, `m_set_recall.c`, `m_set_rel_P.c`,
/// `m_Rprec.c`, `m_recip_rank.c`, `m_P.c` (dividing by the cut-off even past `num_ret`),
/// `m_recall.c`, `m_rel_P.c`, `m_iprec_at_recall.c`, `m_Rprec_mult.c`, `m_unjudged.c`,
/// `m_bpref.c`. Topics a and b sit on decimal edges (1/160 is stored above 0.00625, 3/160
/// below 0.01875), c, d and e on binary ties (1/32, 3/32), printed half-to-even.
#[test]
fn single_division_measures_on_decimal_edges_and_ties() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = evaluate(
        tmp.path(),
        "single_division",
        &[
            "set_P",
            "set_recall",
            "set_relative_P",
            "set_map",
            "Rprec",
            "recip_rank",
            "bpref",
            "P.32,160",
            "recall.32,160",
            "relative_P.32,160",
            "iprec_at_recall.0",
            "Rprec_mult.1.0",
            "unj.160",
        ],
    );
    let mut want = Vec::new();
    for (t, v) in [("a", "0.0063"), ("b", "0.0187")] {
        for m in [
            "set_P",
            "set_recall",
            "set_relative_P",
            "Rprec",
            "P_160",
            "recall_160",
            "relative_P_160",
            "iprec_at_recall_0.00",
            "Rprec_mult_1.00",
            "unj_160",
        ] {
            want.push((m, t, v));
        }
    }
    want.push(("recip_rank", "a", "0.0063"));
    for (t, v) in [("c", "0.0312"), ("d", "0.0938")] {
        for m in [
            "set_P",
            "set_recall",
            "set_relative_P",
            "Rprec",
            "P_32",
            "recall_32",
            "recall_160",
            "relative_P_32",
            "relative_P_160",
            "iprec_at_recall_0.00",
            "Rprec_mult_1.00",
        ] {
            want.push((m, t, v));
        }
    }
    want.extend([
        ("recip_rank", "c", "0.0312"),
        // P_160 divides by 160 although only 32 were retrieved.
        ("P_160", "c", "0.0063"),
        ("P_160", "d", "0.0187"),
        ("bpref", "e", "0.0312"),
        ("set_recall", "e", "0.0312"),
        ("set_map", "e", "0.0312"),
        ("Rprec", "e", "0.0312"),
    ]);
    check("single_division", &out, &want);
}

/// `meas_acc.c` / `meas_avg.c`: per-topic values summed in topic order from 0.0, then divided
/// by the number of topics. set_P 1/10, 34/40, 5/32 average to exactly 0.36875; summed in this
/// order the mean is stored below it, summed in reverse it prints 0.3688.
#[test]
fn summary_sums_topics_in_trec_eval_order() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = evaluate(tmp.path(), "summary", &["set_P"]);
    check(
        "summary",
        &out,
        &[
            ("set_P", "1", "0.1000"),
            ("set_P", "2", "0.8500"),
            ("set_P", "3", "0.1562"),
            ("set_P", "all", "0.3687"),
        ],
    );
}

/// Every constructed case, every measure pytrec_eval has, against trec_eval's own C code:
/// the measures made of `+ - * /` bit for bit.
#[test]
fn edges_match_pytrec_eval_bit_for_bit() {
    let Some(python) = oloproof_reference::reference_python("pytrec_eval rounding-edge check")
    else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut report = String::new();
    for (name, topics) in CASES {
        let (q, r) = write_case(tmp.path(), name, topics);
        report += &common::compare(
            name,
            &common::pytrec(&python, &q, &r, 1, false),
            &common::ours(&q, &r, 1, false),
        );
    }
    assert!(report.is_empty(), "{report}");
}
