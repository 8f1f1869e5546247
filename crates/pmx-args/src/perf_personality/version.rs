//! `perf version [--build-options]`: what this pmx can do, in perf's
//! format (a feature is `on` when pmx has the capability, through its own
//! code where perf links a library: ELF and DWARF are read by pmx's own
//! readers, zstd by the zstd crate).

/// perf's build options: (name, pmx has it, perf's macro).
const BUILD_OPTIONS: &[(&str, bool, &str)] = &[
    ("dwarf", true, "HAVE_DWARF_SUPPORT"),
    (
        "dwarf_getlocations",
        false,
        "HAVE_DWARF_GETLOCATIONS_SUPPORT",
    ),
    ("glibc", true, "HAVE_GLIBC_SUPPORT"),
    ("syscall_table", false, "HAVE_SYSCALL_TABLE_SUPPORT"),
    ("libbfd", false, "HAVE_LIBBFD_SUPPORT"),
    ("debuginfod", false, "HAVE_DEBUGINFOD_SUPPORT"),
    ("libelf", true, "HAVE_LIBELF_SUPPORT"),
    ("libnuma", false, "HAVE_LIBNUMA_SUPPORT"),
    ("numa_num_possible_cpus", false, "HAVE_LIBNUMA_SUPPORT"),
    ("libperl", false, "HAVE_LIBPERL_SUPPORT"),
    ("libpython", false, "HAVE_LIBPYTHON_SUPPORT"),
    ("libslang", false, "HAVE_SLANG_SUPPORT"),
    ("libcrypto", false, "HAVE_LIBCRYPTO_SUPPORT"),
    ("libunwind", false, "HAVE_LIBUNWIND_SUPPORT"),
    ("libdw-dwarf-unwind", true, "HAVE_DWARF_SUPPORT"),
    ("zlib", true, "HAVE_ZLIB_SUPPORT"),
    ("lzma", false, "HAVE_LZMA_SUPPORT"),
    ("get_cpuid", true, "HAVE_AUXTRACE_SUPPORT"),
    ("bpf", false, "HAVE_LIBBPF_SUPPORT"),
    ("aio", false, "HAVE_AIO_SUPPORT"),
    ("zstd", true, "HAVE_ZSTD_SUPPORT"),
    ("libpfm4", true, "HAVE_LIBPFM"),
];

/// `perf version`'s text (with `--build-options`, one line per option).
pub fn version(build_options: bool) -> String {
    let mut s = format!("perf version pmx-{}\n", env!("CARGO_PKG_VERSION"));
    if build_options {
        for (name, on, mac) in BUILD_OPTIONS {
            let state = if *on { "on " } else { "OFF" };
            s.push_str(&format!("{name:>22}: [ {state} ]  # {mac}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_as_perf_prints_them() {
        let v = super::version(true);
        assert!(v.starts_with("perf version pmx-"));
        assert!(v.contains("\n                  zstd: [ on  ]  # HAVE_ZSTD_SUPPORT\n"));
        assert!(v.contains("                libbfd: [ OFF ]  # HAVE_LIBBFD_SUPPORT\n"));
        assert_eq!(super::version(false).lines().count(), 1);
    }
}
