//! The token store (`gigscope::run::tokens`) on real files: written, read back, followed while it is written,
//! and bad input (torn index lines, a cut chunk, lengths that disagree, a step given twice) reported by file,
//! line and record with every other record still read; and `gigscope tokens` on it.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use gigscope::run::tokens::{Channel, StepRecord, StepTokens, TokenStore, TokenWriter, TOKENS_DIR, TOKEN_INDEX_FILE};

fn step(n: usize, seed: f32) -> StepTokens {
    let texts: Vec<String> = (0..n).map(|i| format!(" w{i}")).collect();
    let texts: Vec<Option<&str>> = texts.iter().map(|t| Some(t.as_str())).collect();
    StepTokens::new((0..n as i32).map(|i| i + 100).collect(), (0..n).map(|i| i % 3 != 0).collect(), &texts)
        .with(Channel::Advantage, vec![Some(seed); n])
        .with(Channel::OldLogprob, (0..n).map(|i| Some(-(i as f32) * 0.1 - seed)).collect())
        .with(Channel::Entropy, (0..n).map(|i| (i % 2 == 0).then_some(i as f32)).collect())
}

fn append_line(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn steps_read_back_as_written_and_new_ones_arrive_while_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = TokenWriter::create(dir.path()).unwrap();
    let (a, b) = (step(7, 0.5), step(12, -1.25));
    writer
        .append(
            "it-1.bin",
            &[
                StepRecord { episode: "e1", step: 0, iteration: Some(1), tokens: &a },
                StepRecord { episode: "e1", step: 1, iteration: Some(1), tokens: &b },
            ],
        )
        .unwrap();
    let mut store = TokenStore::open(dir.path()).unwrap();
    assert_eq!(store.read("e1", 0).unwrap().unwrap(), a);
    assert_eq!(store.read("e1", 1).unwrap().unwrap(), b);
    assert_eq!(store.read("e1", 2).unwrap(), None);
    assert_eq!(store.read("e2", 0).unwrap(), None);
    let got = store.read("e1", 1).unwrap().unwrap();
    assert_eq!(got.value(Channel::Entropy, 1), None, "a null stays null");
    assert_eq!(got.value(Channel::Entropy, 2), Some(2.0));
    assert_eq!(got.channel(Channel::RefLogprob), None, "a channel not recorded is null");
    assert_eq!((got.token_text(3), got.offset(3)), (Some(" w3"), 9));

    // Live: a torn index line waits for its newline.
    let c = step(3, 2.0);
    writer.append("it-2.bin", &[StepRecord { episode: "e2", step: 0, iteration: Some(2), tokens: &c }]).unwrap();
    let index = dir.path().join(TOKENS_DIR).join(TOKEN_INDEX_FILE);
    append_line(&index, r#"{"episode":"e3","step":0,"chunk":"it-2.bin""#);
    assert!(store.refresh().unwrap());
    assert_eq!(store.read("e2", 0).unwrap().unwrap(), c);
    assert!(store.errors().is_empty(), "{:?}", store.errors());
    assert_eq!(store.steps("e1").iter().map(|s| (s.step, s.tokens)).collect::<Vec<_>>(), vec![(0, 7), (1, 12)]);

    // The index replaced (a new inode): read again from the start.
    let text = std::fs::read_to_string(&index).unwrap();
    let first: String = text.lines().next().unwrap().to_string() + "\n";
    let tmp = index.with_extension("tmp");
    std::fs::write(&tmp, first).unwrap();
    std::fs::rename(&tmp, &index).unwrap();
    assert!(store.refresh().unwrap());
    assert!(store.read("e1", 0).unwrap().is_some());
    assert_eq!(store.read("e1", 1).unwrap(), None);
}

#[test]
fn bad_records_are_named_by_file_line_and_record_and_the_rest_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = TokenWriter::create(dir.path()).unwrap();
    let steps: Vec<StepTokens> = (0..4).map(|k| step(5 + k, k as f32)).collect();
    let records: Vec<StepRecord> = steps
        .iter()
        .enumerate()
        .map(|(k, t)| StepRecord { episode: "e", step: k as u32, iteration: None, tokens: t })
        .collect();
    writer.append("c.bin", &records).unwrap();
    let tokens = dir.path().join(TOKENS_DIR);
    let index = tokens.join(TOKEN_INDEX_FILE);
    let lines: Vec<String> = std::fs::read_to_string(&index).unwrap().lines().map(String::from).collect();
    // Line 5: a length that disagrees with its counts; line 6: step 0 again; line 7: not JSON; line 8: a chunk
    // outside tokens/; line 9: a channel this version does not know (skipped, the rest read).
    let bad_length = lines[1].replace("\"tokens\":6", "\"tokens\":60").replace("\"step\":1", "\"step\":9");
    let again = lines[0].clone();
    let outside = lines[2].replace("\"chunk\":\"c.bin\"", "\"chunk\":\"../c.bin\"").replace("\"step\":2", "\"step\":8");
    append_line(&index, &format!("{bad_length}\n{again}\n{{oops\n{outside}\n"));
    let store = TokenStore::open(dir.path()).unwrap();
    let errors: Vec<String> = store.errors().iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(
        errors[0].starts_with("tokens/index.jsonl: line 5: length") && errors[0].contains("60 tokens"),
        "{errors:?}"
    );
    assert!(errors[1].contains("line 6: episode \"e\" step 0 was recorded before, on line 1"), "{errors:?}");
    assert!(errors[2].contains("line 7:"), "{errors:?}");
    assert!(errors[3].contains("line 8: chunk \"../c.bin\" is not a file name inside tokens/"), "{errors:?}");
    for k in 0..4 {
        assert_eq!(store.read("e", k).unwrap().unwrap(), steps[k as usize]);
    }

    // The chunk cut mid-write: the last record names the chunk, the index line and the record; the others read.
    let chunk = tokens.join("c.bin");
    let len = std::fs::metadata(&chunk).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&chunk).unwrap().set_len(len - 5).unwrap();
    let err = store.read("e", 3).unwrap_err().to_string();
    assert!(err.contains(&chunk.display().to_string()), "{err}");
    assert!(err.contains("record of episode \"e\" step 3") && err.contains("line 4"), "{err}");
    assert!(err.contains("the chunk is cut"), "{err}");
    assert_eq!(store.read("e", 2).unwrap().unwrap(), steps[2]);

    // Columns that disagree are refused before anything is written.
    let mut bad = step(4, 0.0);
    bad.mask.pop();
    let err =
        writer.append("c.bin", &[StepRecord { episode: "x", step: 0, iteration: None, tokens: &bad }]).unwrap_err();
    assert!(err.to_string().contains("episode \"x\" step 0: mask has 3 entries for 4 token ids"), "{err}");
    assert_eq!(std::fs::metadata(&chunk).unwrap().len(), len - 5);
}

#[test]
fn an_unknown_channel_is_skipped_and_the_known_ones_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = TokenWriter::create(dir.path()).unwrap();
    let t = step(9, 1.0);
    writer.append("c.bin", &[StepRecord { episode: "e", step: 0, iteration: None, tokens: &t }]).unwrap();
    let index = dir.path().join(TOKENS_DIR).join(TOKEN_INDEX_FILE);
    let text = std::fs::read_to_string(&index).unwrap().replace("\"old_logprob\"", "\"future_channel\"");
    std::fs::write(&index, text).unwrap();
    let store = TokenStore::open(dir.path()).unwrap();
    let got = store.read("e", 0).unwrap().unwrap();
    assert_eq!(got.recorded(), vec![Channel::Advantage, Channel::Entropy]);
    assert_eq!(got.channel(Channel::Entropy), t.channel(Channel::Entropy));
}

fn gigscope(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gigscope")).args(args).output().unwrap()
}

#[test]
fn the_tokens_command_prints_one_row_per_token_with_nulls_and_derived_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = TokenWriter::create(dir.path()).unwrap();
    let t = StepTokens::new(vec![5, 6, 7], vec![false, true, true], &[Some("a"), None, Some("\"c\"")])
        .with(Channel::Advantage, vec![Some(0.1), Some(0.1), Some(0.1)])
        .with(Channel::OldLogprob, vec![Some(-1.0), Some(-2.0), Some(f32::NAN)])
        .with(Channel::RolloutLogprob, vec![Some(-1.5), None, Some(-1.0)])
        .with(Channel::Clipped, vec![Some(0.0), Some(1.0), Some(0.0)]);
    writer.append("c.bin", &[StepRecord { episode: "ep", step: 2, iteration: Some(4), tokens: &t }]).unwrap();
    let run = dir.path().to_str().unwrap();
    let out = gigscope(&["tokens", run, "--episode", "ep", "--format", "jsonl"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 3);
    let keys: Vec<&str> = rows[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "step",
            "index",
            "id",
            "text",
            "offset",
            "mask",
            "advantage",
            "old_logprob",
            "rollout_logprob",
            "ref_logprob",
            "entropy",
            "ratio",
            "clipped",
            "mismatch",
            "mismatch_weight",
            "kl_k1",
            "kl_k3",
            "effective_weight"
        ]
    );
    let r0 = &rows[0];
    assert_eq!((r0["step"].as_u64(), r0["id"].as_i64(), r0["text"].as_str()), (Some(2), Some(5), Some("a")));
    assert_eq!(r0["advantage"].to_string(), "0.1", "the f32's shortest form");
    assert_eq!(r0["mismatch"].as_f64(), Some(0.5));
    assert_eq!(
        (r0["clipped"].as_bool(), r0["ref_logprob"].is_null(), r0["kl_k1"].is_null()),
        (Some(false), true, true)
    );
    assert_eq!(r0["effective_weight"].as_f64(), Some(0.0), "masked out");
    assert!(rows[1]["text"].is_null() && rows[1]["mismatch"].is_null());
    assert_eq!(rows[1]["effective_weight"].as_f64(), Some(0.0), "clipped");
    assert_eq!((rows[2]["text"].as_str(), rows[2]["offset"].as_u64()), (Some("\"c\""), Some(1)));
    assert_eq!(rows[2]["old_logprob"].as_str(), Some("NaN"));
    assert_eq!(rows[2]["effective_weight"].to_string(), "0.1");

    let table = gigscope(&["tokens", run, "--episode", "ep", "--step", "2"]);
    assert!(table.status.success());
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.starts_with("step 2: 3 token(s), 2 trained; channels: advantage, old_logprob, rollout_logprob, clipped")
    );
    assert!(table.contains("<unknown id>"), "{table}");

    let missing = gigscope(&["tokens", run, "--episode", "nope"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no tokens recorded for episode \"nope\""));
}
