//! The profile scrapers' files in `deploy/`, checked as far as they can be
//! without their servers: `parca.yaml` is YAML (read by PyYAML; skipped
//! with a message without it) whose `scrape_configs` entry has the keys
//! Parca's documentation names and asks `/debug/pprof/profile` as a delta
//! `process_cpu` profile; `pmx.alloy` is well-formed Alloy syntax (blocks
//! balanced, one `name = value` or block per line) using only the
//! blocks and attributes Alloy's `pyroscope.scrape` and `pyroscope.write`
//! reference documents, with the same profile path.

use std::path::PathBuf;
use std::process::Command;

fn deploy(name: &str) -> PathBuf {
    pmx_testkit::cc::repo().join("deploy").join(name)
}

#[test]
fn parca_yaml_is_yaml_with_the_documented_keys() {
    let ok = Command::new("python3")
        .args(["-c", "import yaml"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        pmx_testkit::skip("python3 with PyYAML (python3-yaml) is missing: parca.yaml is not read");
        return;
    }
    // PyYAML turns the file into JSON; the checks are here.
    let script = "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))";
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(deploy("parca.yaml"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", pmx_testkit::text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let top: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(top, ["scrape_configs"]);
    let job = &v["scrape_configs"][0];
    let documented = [
        "job_name",
        "scrape_interval",
        "scrape_timeout",
        "scheme",
        "static_configs",
        "profiling_config",
        "relabel_configs",
        "params",
    ];
    for k in job.as_object().unwrap().keys() {
        assert!(documented.contains(&k.as_str()), "undocumented key {k}");
    }
    assert!(!job["static_configs"][0]["targets"]
        .as_array()
        .unwrap()
        .is_empty());
    let pprof = job["profiling_config"]["pprof_config"].as_object().unwrap();
    let cpu = &pprof["process_cpu"];
    assert_eq!(cpu["path"], "/debug/pprof/profile");
    assert_eq!(
        (cpu["enabled"].as_bool(), cpu["delta"].as_bool()),
        (Some(true), Some(true))
    );
    for (name, p) in pprof {
        assert!(
            ["process_cpu", "memory", "block", "goroutine", "mutex"].contains(&name.as_str()),
            "{name}"
        );
        for k in p.as_object().unwrap().keys() {
            assert!(
                ["enabled", "path", "delta", "keep_sample_type"].contains(&k.as_str()),
                "{name}.{k}"
            );
        }
        if name != "process_cpu" {
            assert_eq!(
                p["enabled"].as_bool(),
                Some(false),
                "{name}: pmx serves only the CPU profile"
            );
        }
    }
}

#[test]
fn the_alloy_file_is_well_formed_with_the_documented_names() {
    let text = std::fs::read_to_string(deploy("pmx.alloy")).unwrap();
    // Block paths (outer to inner) and their documented attributes.
    let attrs = |path: &str| -> &[&str] {
        match path {
            "pyroscope.scrape" => &[
                "targets",
                "forward_to",
                "job_name",
                "params",
                "scrape_interval",
                "scrape_timeout",
                "delta_profiling_duration",
                "scheme",
                "bearer_token",
                "bearer_token_file",
            ],
            "pyroscope.scrape/profiling_config" => &["path_prefix"],
            p if p.starts_with("pyroscope.scrape/profiling_config/profile.") => {
                &["enabled", "path", "delta"]
            }
            "pyroscope.write" => &["external_labels"],
            "pyroscope.write/endpoint" => &["url", "name", "remote_timeout", "headers"],
            _ => &[],
        }
    };
    let blocks = [
        "pyroscope.scrape",
        "pyroscope.scrape/profiling_config",
        "pyroscope.scrape/profiling_config/profile.process_cpu",
        "pyroscope.scrape/profiling_config/profile.memory",
        "pyroscope.scrape/profiling_config/profile.block",
        "pyroscope.scrape/profiling_config/profile.goroutine",
        "pyroscope.scrape/profiling_config/profile.mutex",
        "pyroscope.write",
        "pyroscope.write/endpoint",
    ];
    let mut stack: Vec<String> = Vec::new();
    let mut in_list = 0i32;
    let mut cpu_path = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split("//").next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        if in_list > 0 {
            in_list += line.matches('[').count() as i32 - line.matches(']').count() as i32;
            continue;
        }
        if line == "}" {
            assert!(stack.pop().is_some(), "line {}: unbalanced }}", n + 1);
        } else if let Some(head) = line.strip_suffix('{') {
            let name = head.split_whitespace().next().unwrap();
            let label = head[name.len()..].trim();
            assert!(
                label.is_empty() || (label.starts_with('"') && label.ends_with('"')),
                "line {}: a block label is a string",
                n + 1
            );
            let mut path = stack.clone();
            path.push(name.to_string());
            let path = path.join("/");
            assert!(
                blocks.contains(&path.as_str()),
                "line {}: undocumented block {path}",
                n + 1
            );
            stack.push(name.to_string());
        } else {
            let (key, value) = line
                .split_once('=')
                .unwrap_or_else(|| panic!("line {}: {line}", n + 1));
            let (key, value) = (key.trim(), value.trim());
            let path = stack.join("/");
            assert!(
                attrs(&path).contains(&key),
                "line {}: {key} is not an attribute of {path}",
                n + 1
            );
            if path.ends_with("profile.process_cpu") && key == "path" {
                cpu_path = Some(value.to_string());
            }
            in_list = value.matches('[').count() as i32 - value.matches(']').count() as i32;
        }
    }
    assert!(stack.is_empty(), "unclosed blocks {stack:?}");
    assert_eq!(cpu_path.as_deref(), Some("\"/debug/pprof/profile\""));
}
