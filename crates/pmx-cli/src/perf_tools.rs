//! perf's small sampling commands: `inject` (`pmx_profile::inject`),
//! `evlist` and `buildid-list` (`pmx_profile::perf_text`, the file's
//! features), `buildid-cache` (`pmx_symbols::buildid_cache`).

use pmx_profile::perf_text;
use pmx_symbols::buildid_cache as cache;
use std::path::PathBuf;

/// Arguments of `pmx inject`.
#[derive(Debug, clap::Args)]
pub struct InjectArgs {
    /// Input file ('-': a pipe-mode stream on standard input).
    #[arg(short, long, value_name = "FILE", default_value = "-")]
    input: PathBuf,
    /// Output file ('-': pipe mode on standard output).
    #[arg(short, long, value_name = "FILE", default_value = "-")]
    output: PathBuf,
    /// Add the build ids of the mapped binaries.
    #[arg(short = 'b', long = "build-ids")]
    build_ids: bool,
    /// Messages on standard error (accepted as perf's -v).
    #[arg(short, long)]
    verbose: bool,
}

/// Arguments of `pmx evlist` and `pmx buildid-list`.
#[derive(Debug, clap::Args)]
pub struct FileArgs {
    /// Input file.
    #[arg(short, long, value_name = "FILE", default_value = "perf.data")]
    input: PathBuf,
    /// evlist: each event's attr fields too.
    #[arg(short, long)]
    verbose: bool,
}

/// Arguments of `pmx buildid-cache`.
#[derive(Debug, clap::Args)]
pub struct CacheArgs {
    /// Copy these binaries into the cache.
    #[arg(short, long, value_name = "FILE")]
    add: Vec<PathBuf>,
    /// Take these binaries out of the cache.
    #[arg(short, long, value_name = "FILE")]
    remove: Vec<PathBuf>,
    /// List the cache: build id and path.
    #[arg(short, long)]
    list: bool,
    /// Say what was added or removed.
    #[arg(short, long)]
    verbose: bool,
}

/// Run `pmx inject`.
pub fn inject(a: &InjectArgs) -> anyhow::Result<i32> {
    let (input, output) = (a.input.clone(), a.output.clone());
    let o = pmx_profile::inject::InjectOptions {
        input,
        output,
        build_ids: a.build_ids,
    };
    let s = pmx_profile::inject::inject(&o)?;
    (a.verbose).then(|| eprintln!("pmx inject: {s}"));
    Ok(crate::exit::OK)
}

/// Run `pmx evlist` (`list`: false) or `pmx buildid-list`.
pub fn file(a: &FileArgs, list: bool) -> anyhow::Result<i32> {
    let text = match list {
        true => perf_text::buildid_list(&a.input),
        false => perf_text::evlist(&a.input, a.verbose),
    };
    print!(
        "{}",
        text.map_err(|e| anyhow::anyhow!("{}: {e}", a.input.display()))?
    );
    Ok(crate::exit::OK)
}

/// Run `pmx buildid-cache`.
pub fn buildid_cache(a: &CacheArgs) -> anyhow::Result<i32> {
    let dir = pmx_io::dirs::Dirs::from_env().buildid;
    let out = &mut std::io::stdout().lock();
    cache::run(&dir, &a.add, &a.remove, a.list, a.verbose, out)?;
    Ok(crate::exit::OK)
}
