//! The write stage: the perf.data file (an earlier one moved to `.old`),
//! every record counted on its way in ([`Tally`]), the rings drained into
//! it with a FINISHED_ROUND after each round, and the feature sections at
//! the end.

use super::features::features;
use super::open::Ring;
use super::options::RecordEvent;
use super::tally::Tally;
use pmx_perf::Attr;
use pmx_perfdata::write::Writer;
use pmx_perfdata::FileAttr;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

/// `PERF_RECORD_FINISHED_ROUND` (perf.data only).
const FINISHED_ROUND: u32 = 68;

/// The file being written and what went into it.
pub(super) struct Sink {
    writer: Writer<BufWriter<File>>,
    /// The counts of every record written.
    pub(super) tally: Tally,
    /// Records written (FINISHED_ROUND markers included).
    pub(super) records: u64,
    sample_type: u64,
    by_id: HashMap<u64, usize>,
}

/// What the finished file is.
pub(super) struct Written {
    /// The counts of every record written.
    pub(super) tally: Tally,
    /// Records written.
    pub(super) records: u64,
    /// The file's size in bytes.
    pub(super) bytes: u64,
}

impl Sink {
    /// Create `output` (moving an earlier file to `output.old`, whose path
    /// is returned) with the attrs as given to the kernel and the ids of
    /// every event's fds.
    pub(super) fn create(
        output: &Path,
        attrs: &[Attr],
        events: &[RecordEvent],
        ids: &[Vec<u64>],
        by_id: HashMap<u64, usize>,
    ) -> io::Result<(Sink, Option<PathBuf>)> {
        let old_output = rotate(output)?;
        let file = File::create(output).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", output.display()))
        })?;
        let file_attrs: Vec<FileAttr> = attrs
            .iter()
            .zip(events)
            .zip(ids)
            .map(|((a, e), ids)| FileAttr {
                attr: a.to_perf_data_bytes(),
                ids: ids.clone(),
                name: e.name.clone(),
            })
            .collect();
        let sink = Sink {
            writer: Writer::create(BufWriter::new(file), file_attrs)?,
            tally: Tally {
                samples: vec![0; events.len()],
                ..Tally::default()
            },
            records: 0,
            sample_type: attrs[0].sample_type,
            by_id,
        };
        Ok((sink, old_output))
    }

    /// Count and write one record.
    pub(super) fn write(&mut self, rec: &[u8]) -> io::Result<()> {
        self.tally.see(rec, self.sample_type, &self.by_id);
        self.writer.write_record(rec)?;
        self.records += 1;
        Ok(())
    }

    /// Drain every ring into the file, then a FINISHED_ROUND if anything
    /// came.
    pub(super) fn drain(&mut self, rings: &mut [Ring]) -> io::Result<()> {
        let mut any = false;
        let mut write_err: Option<io::Error> = None;
        for ring in rings.iter_mut() {
            ring.mmap.read_records(|rec| {
                if write_err.is_some() {
                    return;
                }
                match self.write(rec) {
                    Ok(()) => any = true,
                    Err(e) => write_err = Some(e),
                }
            });
        }
        if let Some(e) = write_err {
            return Err(e);
        }
        if any {
            let mut fr = Vec::with_capacity(8);
            fr.extend_from_slice(&FINISHED_ROUND.to_ne_bytes());
            fr.extend_from_slice(&0u16.to_ne_bytes());
            fr.extend_from_slice(&8u16.to_ne_bytes());
            self.writer.write_record(&fr)?;
            self.records += 1;
        }
        Ok(())
    }

    /// Write the feature sections (`cmdline` stored as the command line;
    /// notes about missing build ids added to `notes`) and close the file.
    pub(super) fn finish(self, cmdline: &[String], notes: &mut Vec<String>) -> io::Result<Written> {
        let feats = features(cmdline, &self.tally, notes);
        let out = self.writer.finish(&feats)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Written {
            tally: self.tally,
            records: self.records,
            bytes,
        })
    }
}

/// Move an existing `path` to `path.old`, as perf does.
fn rotate(path: &Path) -> io::Result<Option<PathBuf>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let mut old = path.as_os_str().to_owned();
    old.push(".old");
    let old = PathBuf::from(old);
    std::fs::rename(path, &old).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot move {} to {}: {e}", path.display(), old.display()),
        )
    })?;
    Ok(Some(old))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::synth::{comm_record, id_trailer};
    use pmx_perf::{read_format, sample_type};

    #[test]
    fn records_are_counted_written_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.data");
        std::fs::write(&out, b"old").unwrap();
        let st = sample_type::IP | sample_type::TID | sample_type::TIME;
        let attr = Attr {
            type_: 1,
            sample_type: st,
            read_format: read_format::ID,
            sample_id_all: true,
            ..Attr::default()
        };
        let ev = RecordEvent {
            name: "cpu-clock".into(),
            attr: attr.clone(),
            inherit: None,
            call_graph: None,
        };
        let (mut sink, old) =
            Sink::create(&out, &[attr], &[ev], &[vec![7]], HashMap::new()).unwrap();
        assert_eq!(old, Some(dir.path().join("t.data.old")));
        let r = comm_record(5, 5, "worker", &id_trailer(st, 5, 5, 7)).unwrap();
        sink.write(&r).unwrap();
        // No ring, nothing drained: no FINISHED_ROUND either.
        sink.drain(&mut []).unwrap();
        assert_eq!(sink.records, 1);
        let mut notes = Vec::new();
        let w = sink
            .finish(&["pmx".into(), "record".into()], &mut notes)
            .unwrap();
        assert_eq!(w.records, 1);
        assert_eq!(w.bytes, std::fs::metadata(&out).unwrap().len());
        let mut reader = pmx_perfdata::Reader::open(&out).unwrap();
        let mut comms = Vec::new();
        while let Some(rec) = reader.next_record().unwrap() {
            if let pmx_perfdata::read::Record::Comm(c) = rec {
                comms.push(String::from_utf8_lossy(c.comm).into_owned());
            }
        }
        assert_eq!(comms, ["worker"]);
        assert_eq!(
            reader.features().cmdline.as_deref(),
            Some(&["pmx".to_string(), "record".to_string()][..])
        );
    }
}
