use super::*;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn mknod(path: &Path, mode: libc::mode_t, major: u32, minor: u32) -> bool {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string; mknod reads it only.
    unsafe { libc::mknod(c.as_ptr(), mode, libc::makedev(major, minor)) == 0 }
}

#[test]
fn a_regular_file_is_replaced_only_at_commit() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.csv");
    fs::write(&p, "old\n").unwrap();
    let mut out = OutFile::create(&p, Options::default()).unwrap();
    assert_eq!(out.mode(), Mode::Replace);
    assert!(out.seekable());
    out.write_all(b"new\n").unwrap();
    // Before the commit, the old bytes are still there.
    assert_eq!(fs::read_to_string(&p).unwrap(), "old\n");
    out.commit().unwrap();
    assert_eq!(fs::read_to_string(&p).unwrap(), "new\n");
    assert_eq!(names(dir.path()), ["r.csv"]);
}

#[test]
fn a_dropped_file_leaves_the_old_one_and_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.csv");
    fs::write(&p, "old\n").unwrap();
    let mut out = OutFile::create(&p, Options::default()).unwrap();
    out.write_all(b"half").unwrap();
    drop(out);
    assert_eq!(fs::read_to_string(&p).unwrap(), "old\n");
    assert_eq!(names(dir.path()), ["r.csv"]);
    // A new file that is never committed is never created.
    let q = dir.path().join("new.csv");
    drop(OutFile::create(&q, Options::default()).unwrap());
    assert_eq!(names(dir.path()), ["r.csv"]);
}

#[test]
fn the_old_file_is_kept_only_when_it_is_a_non_empty_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let keep = Options {
        backup_old: true,
        ..Options::default()
    };
    let p = dir.path().join("perf.data");
    // Nothing there: no .old.
    let out = OutFile::create(&p, keep).unwrap();
    assert_eq!(out.backup(), None);
    out.commit().unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"");
    // An empty file: replaced, no .old (perf's rule).
    let out = OutFile::create(&p, keep).unwrap();
    assert_eq!(out.backup(), None);
    out.commit().unwrap();
    assert_eq!(names(dir.path()), ["perf.data"]);
    // A non-empty one: moved to .old at the commit, not before.
    fs::write(&p, "first").unwrap();
    let mut out = OutFile::create(&p, keep).unwrap();
    assert_eq!(
        out.backup(),
        Some(dir.path().join("perf.data.old").as_path())
    );
    out.write_all(b"second").unwrap();
    assert_eq!(names(dir.path())[1..], ["perf.data"]);
    out.commit().unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"second");
    assert_eq!(
        fs::read(dir.path().join("perf.data.old")).unwrap(),
        b"first"
    );
    // A failed run touches neither.
    drop(OutFile::create(&p, keep).unwrap());
    assert_eq!(fs::read(&p).unwrap(), b"second");
    assert_eq!(
        fs::read(dir.path().join("perf.data.old")).unwrap(),
        b"first"
    );
}

#[test]
fn permissions_of_the_replaced_file_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.json");
    fs::write(&p, "{}").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
    let mut out = OutFile::create(&p, Options::default()).unwrap();
    out.write_all(b"[]").unwrap();
    out.commit().unwrap();
    assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o640);
}

#[test]
fn a_symlink_is_written_through_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.data");
    fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.data");
    std::os::unix::fs::symlink("real.data", &link).unwrap();
    let keep = Options {
        backup_old: true,
        ..Options::default()
    };
    let mut out = OutFile::create(&link, keep).unwrap();
    assert_eq!(
        out.backup(),
        Some(dir.path().join("real.data.old").as_path())
    );
    out.write_all(b"new").unwrap();
    out.commit().unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&real).unwrap(), b"new");
    assert_eq!(fs::read(dir.path().join("real.data.old")).unwrap(), b"old");
    // A dangling link: its target is created, the link kept.
    let dangling = dir.path().join("d");
    std::os::unix::fs::symlink("sub-target", &dangling).unwrap();
    write(&dangling, b"x").unwrap();
    assert!(fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(dir.path().join("sub-target")).unwrap(), b"x");
}

#[test]
fn a_fifo_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("fifo");
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let p = p.clone();
        std::thread::spawn(move || fs::read(p).unwrap())
    };
    let mut out = OutFile::create(&p, Options::default()).unwrap();
    assert_eq!(out.mode(), Mode::InPlace);
    assert!(!out.seekable());
    assert!(out.seek(SeekFrom::Start(0)).is_err());
    out.write_all(b"through the pipe").unwrap();
    out.commit().unwrap();
    assert_eq!(reader.join().unwrap(), b"through the pipe");
    assert!(fs::metadata(&p).unwrap().file_type().is_fifo());
    assert_eq!(names(dir.path()), ["fifo"]);
}

#[test]
fn a_device_is_written_in_place_and_its_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    // /dev/full's numbers, on a node of our own.
    if !mknod(&full, libc::S_IFCHR | 0o666, 1, 7) {
        eprintln!("skipped: mknod needs CAP_MKNOD");
        return;
    }
    let keep = Options {
        backup_old: true,
        ..Options::default()
    };
    let mut out = OutFile::create(&full, keep).unwrap();
    assert_eq!(out.mode(), Mode::InPlace);
    assert_eq!(out.backup(), None);
    let err = out.write_all(b"data").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    let msg = err.to_string();
    assert!(msg.starts_with(&format!("{}: ", full.display())), "{msg}");
    assert!(msg.contains("No space left on device"), "{msg}");
    drop(out);
    assert!(fs::metadata(&full).unwrap().file_type().is_char_device());
    assert_eq!(names(dir.path()), ["full"]);
}

#[test]
fn directories_and_missing_directories_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = OutFile::create(dir.path(), Options::default()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
    let msg = err.to_string();
    assert!(msg.starts_with(&dir.path().display().to_string()), "{msg}");
    assert!(msg.contains("Is a directory"), "{msg}");
    let p = dir.path().join("no/such/r.csv");
    let msg = OutFile::create(&p, Options::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("no/such/r.csv: the directory "), "{msg}");
    assert!(msg.ends_with("no/such does not exist"), "{msg}");
}

#[test]
fn an_open_descriptor_under_proc_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("held");
    let mut held = File::create(&p).unwrap();
    held.write_all(b"one ").unwrap();
    let ino = fs::metadata(&p).unwrap().ino();
    use std::os::fd::AsRawFd;
    let via = PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
    let mut out = OutFile::create(&via, Options::default()).unwrap();
    assert_eq!(out.mode(), Mode::InPlace);
    out.write_all(b"two").unwrap();
    out.commit().unwrap();
    // Appended to the same file, not replaced by another.
    assert_eq!(fs::metadata(&p).unwrap().ino(), ino);
    assert_eq!(fs::read(&p).unwrap(), b"one two");
}

#[test]
fn append_writes_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("log");
    let append = Options {
        append: true,
        ..Options::default()
    };
    for line in ["a\n", "b\n"] {
        let mut out = OutFile::create(&p, append).unwrap();
        assert_eq!(out.mode(), Mode::InPlace);
        out.write_all(line.as_bytes()).unwrap();
        out.commit().unwrap();
    }
    assert_eq!(fs::read_to_string(&p).unwrap(), "a\nb\n");
}
