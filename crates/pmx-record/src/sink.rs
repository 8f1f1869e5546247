//! The write stage: the output ([`pmx_io::OutFile`]: a file put in
//! place only when complete, an earlier non-empty one kept as `.old`; a
//! device written in place; `-` and FIFOs get pipe mode, as `perf record
//! -o -` writes it; or a caller's [`RecordSink`]), every record counted on
//! its way in ([`Tally`]), the rings drained into it with a
//! FINISHED_ROUND after each round, and the feature sections at the end.
//! `-z` and `--switch-output` work on a file only ([`FileSink`]).

use super::features::features;
use super::open::Ring;
use super::options::{FileOptions, RecordEvent};
use super::output::{FileSink, PipeSink, RecordSink};
use super::switch::{self, Switch};
use super::tally::Tally;
use pmx_io::{Options, OutFile};
use pmx_perf::Attr;
use pmx_perfdata::format::feature;
use pmx_perfdata::write::Compressor;
use pmx_perfdata::FileAttr;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// `PERF_RECORD_FINISHED_ROUND` (perf.data only).
const FINISHED_ROUND: u32 = 68;

/// Where a recording goes: the file (or `-`, FIFO, device) the user
/// named, or a caller's sink (a live session's stream: `top`, `serve`'s
/// profiles; or the caller's own).
pub enum Output<'a> {
    /// A path, as `-o` takes it.
    Path(&'a Path),
    /// A sink of the caller's.
    Sink(Box<dyn RecordSink>),
}

/// The sink: a file (which `-z` and `--switch-output` need as one), or
/// any other.
enum Out {
    File(Box<FileSink>),
    Other(Box<dyn RecordSink>),
}

impl Out {
    fn write_record(&mut self, rec: &[u8]) -> io::Result<()> {
        match self {
            Out::File(w) => w.record(rec),
            Out::Other(w) => w.record(rec),
        }
    }
}

/// The file being written and what went into it.
pub(super) struct Sink {
    writer: Out,
    /// The counts of every record written.
    pub(super) tally: Tally,
    /// Records written (FINISHED_ROUND markers included).
    pub(super) records: u64,
    sample_type: u64,
    by_id: HashMap<u64, usize>,
    /// GROUP_DESC: (name, leader index, members) of each `{…}` group.
    groups: Vec<(String, u32, u32)>,
    /// `-z`: the records go through it, and the ring size in bytes.
    compressor: Option<(Compressor, u32)>,
    /// Write the BUILD_ID feature.
    build_ids: bool,
    /// `--switch-output`: the state, the output's path, the attrs and the
    /// command line every new file gets.
    switch: Option<(Switch, PathBuf, Vec<FileAttr>, Vec<String>)>,
    /// The TRACING_DATA feature, when tracepoints are recorded.
    tracing_data: Option<Vec<u8>>,
    /// `--off-cpu`: turns the switch event's records into `offcpu-time` samples.
    pub(super) offcpu: Option<super::offcpu::OffCpu>,
}

/// What the finished file is.
pub(super) struct Written {
    /// The counts of every record written.
    pub(super) tally: Tally,
    /// Records written.
    pub(super) records: u64,
    /// The file's size in bytes.
    pub(super) bytes: u64,
    /// `--switch-output`: every file, renamed with its time stamp.
    pub(super) switched: Vec<PathBuf>,
}

impl Sink {
    /// Open `output` (an earlier non-empty file will be kept as
    /// `output.old`, whose path is returned) with the attrs as given to
    /// the kernel and the ids of every event's fds; `cmdline` goes into
    /// a pipe stream's header; `file`: compression (file mode only) and
    /// build ids, with the rings' `mmap_pages`.
    pub(super) fn create(
        output: Output<'_>,
        (attrs, events): (&[Attr], &[RecordEvent]),
        ids: &[Vec<u64>],
        by_id: HashMap<u64, usize>,
        (cmdline, file, mmap_pages): (&[String], &FileOptions, usize),
    ) -> io::Result<(Sink, Option<PathBuf>)> {
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
        let keep = file.switch_output.map(|w| (w, file_attrs.clone()));
        let out_path = match &output {
            Output::Path(p) => p.to_path_buf(),
            Output::Sink(_) => PathBuf::new(),
        };
        let (mut writer, old_output) = match output {
            Output::Path(path) => Self::open_file(path)?,
            Output::Sink(w) => (Out::Other(w), None),
        };
        // A file's features are written at its end; a stream's header
        // carries those known now.
        match &mut writer {
            Out::File(w) => w.begin(file_attrs, &Default::default())?,
            Out::Other(w) => {
                let start = features(cmdline, &Tally::default(), &mut Vec::new());
                w.begin(file_attrs, &start)?
            }
        }
        let compressor = match (file.compression, &writer) {
            (None, _) => None,
            (Some(level), Out::File(_)) => {
                // perf sizes its decompression buffer by this: at least a batch.
                let len = (mmap_pages * 4096).max(2 * pmx_perfdata::write::compress::BATCH);
                Some((Compressor::new(level)?, len.min(u32::MAX as usize) as u32))
            }
            (Some(_), _) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "-z: pmx compresses records in a file, not in pipe-mode output",
                ))
            }
        };
        let switch = match (keep, &writer) {
            (None, _) => None,
            (Some((w, attrs)), Out::File(_)) => {
                Some((Switch::new(w), out_path, attrs, cmdline.to_vec()))
            }
            (Some(_), _) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "--switch-output: pmx switches files, not pipe-mode output",
                ))
            }
        };
        let sink = Sink {
            writer,
            tally: Tally {
                samples: vec![0; events.len()],
                ..Tally::default()
            },
            records: 0,
            sample_type: attrs[0].sample_type,
            by_id,
            groups: super::groups::descriptions(events),
            compressor,
            build_ids: file.build_ids,
            switch,
            tracing_data: None,
            offcpu: None,
        };
        Ok((sink, old_output))
    }

    /// The file the user named, in file mode or (when it cannot seek)
    /// pipe mode; the path an earlier non-empty file was kept as.
    fn open_file(output: &Path) -> io::Result<(Out, Option<PathBuf>)> {
        let backup_old = Options {
            backup_old: true,
            ..Options::default()
        };
        let out = OutFile::create(output, backup_old)?;
        if out.is_terminal() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a terminal: perf.data is binary; redirect it to a file or \
                     pipe it into `pmx report -i -` or `perf report -i -`",
                    match out.path().to_str() {
                        Some("-") => "standard output".to_string(),
                        _ => out.path().display().to_string(),
                    }
                ),
            ));
        }
        let old_output = out.backup().map(Path::to_path_buf);
        let writer = match out.seekable() {
            true => Out::File(Box::new(FileSink::new(out))),
            false => Out::Other(Box::new(PipeSink::out_file(out))),
        };
        Ok((writer, old_output))
    }

    /// Count and write one record.
    pub(super) fn write(&mut self, rec: &[u8]) -> io::Result<()> {
        let rewritten;
        let rec = match self.offcpu.as_mut().map(|c| c.feed(rec)) {
            Some(super::offcpu::Fed::Taken) => return Ok(()),
            Some(super::offcpu::Fed::Rewrite(v)) => {
                rewritten = v;
                &rewritten[..]
            }
            _ => rec,
        };
        self.tally.see(rec, self.sample_type, &self.by_id);
        self.records += 1;
        if let Some((sw, ..)) = &mut self.switch {
            let kind = u32::from_ne_bytes(rec[..4].try_into().expect("a record header"));
            if switch::is_side_band(kind) {
                sw.side_band.push(rec.to_vec());
            }
        }
        match &mut self.compressor {
            Some((c, _)) => c.add(rec, &mut |r| self.writer.write_record(r)),
            None => self.writer.write_record(rec),
        }
    }

    /// The TRACING_DATA feature: kept for a file's end; a pipe gets it
    /// now, before any sample.
    pub(super) fn set_tracing_data(&mut self, data: Option<Vec<u8>>) -> io::Result<()> {
        if let (Out::Other(w), Some(d)) = (&mut self.writer, &data) {
            w.tracing_data(d)?;
        }
        self.tracing_data = data;
        Ok(())
    }

    /// Write the off-CPU samples paired so far (`last`: all); whether any.
    fn off_cpu_samples(&mut self, last: bool) -> io::Result<bool> {
        let Some(mut conv) = self.offcpu.take() else {
            return Ok(false);
        };
        let before = conv.samples;
        let mut err = None;
        conv.flush(last, &mut |r| {
            if err.is_none() {
                err = self.write(r).err();
            }
        });
        let any = conv.samples != before;
        self.offcpu = Some(conv);
        err.map_or(Ok(any), Err)
    }

    /// Drain every ring into the file, then end the round
    /// ([`Sink::end_round`]).
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
        self.end_round(any)
    }

    /// Write the records of `bytes` (a ring's bytes as a reader thread
    /// copied them: whole records one after the other); whether there
    /// were any. A header that does not fit ends the walk (the rest is
    /// not records). Each record is counted; without `--off-cpu`, `-z`
    /// or `--switch-output` (which look at each) they are written at once.
    pub(super) fn write_chunk(&mut self, bytes: &[u8]) -> io::Result<bool> {
        let whole = self.offcpu.is_none() && self.compressor.is_none() && self.switch.is_none();
        let mut at = 0;
        while let Some(h) = bytes.get(at..at + 8) {
            let size = usize::from(u16::from_ne_bytes([h[6], h[7]]));
            if size < 8 || size % 8 != 0 || at + size > bytes.len() {
                break;
            }
            let rec = &bytes[at..at + size];
            match whole {
                true => {
                    self.tally.see(rec, self.sample_type, &self.by_id);
                    self.records += 1;
                }
                false => self.write(rec)?,
            }
            at += size;
        }
        if whole && at != 0 {
            match &mut self.writer {
                Out::File(w) => w.records(&bytes[..at])?,
                Out::Other(w) => w.records(&bytes[..at])?,
            }
        }
        Ok(at != 0)
    }

    /// The end of a round of draining (`any`: records came): the
    /// off-CPU samples paired so far, then a FINISHED_ROUND if anything
    /// came. A live sink gets its round marker every time (a live reader
    /// learns that time has passed); every sink is flushed.
    pub(super) fn end_round(&mut self, mut any: bool) -> io::Result<()> {
        any |= self.off_cpu_samples(false)?;
        if let Some((c, _)) = &mut self.compressor {
            c.flush(&mut |r| self.writer.write_record(r))?;
        }
        let live = matches!(&self.writer, Out::Other(w) if w.live());
        if any || live {
            let mut fr = Vec::with_capacity(8);
            fr.extend_from_slice(&FINISHED_ROUND.to_ne_bytes());
            fr.extend_from_slice(&0u16.to_ne_bytes());
            fr.extend_from_slice(&8u16.to_ne_bytes());
            self.writer.write_record(&fr)?;
            self.records += 1;
        }
        match &mut self.writer {
            Out::File(w) => w.flush(),
            Out::Other(w) => w.flush(),
        }
    }

    /// Write the feature sections (`cmdline` stored as the command line;
    /// notes about missing build ids added to `notes`) and close the file.
    pub(super) fn finish(
        mut self,
        cmdline: &[String],
        notes: &mut Vec<String>,
    ) -> io::Result<Written> {
        self.off_cpu_samples(true)?;
        let lost = self.tally.lost_records;
        if self.offcpu.is_some() && lost > 0 {
            // A wait needs its sched_switch sample and its switch-in.
            notes.push(format!(
                "--off-cpu: with the {lost} records lost, up to {lost} waits are missing from \
                 the profile (a wait is its switch-out sample and its switch-in record); a \
                 larger -m keeps them"
            ));
        }
        let mut feats = features(cmdline, &self.tally, notes);
        feats.group_desc = self.groups;
        feats.tracing_data = self.tracing_data;
        if !self.build_ids {
            feats.build_ids.clear();
        }
        let mut raw = Vec::new();
        let mut writer = self.writer;
        if let Some((mut c, len)) = self.compressor {
            c.flush(&mut |r| writer.write_record(r))?;
            raw.push((feature::COMPRESSED, c.feature(len)));
        }
        let bytes = match writer {
            Out::File(w) => w.finish_with(&feats, &raw)?,
            Out::Other(w) => w.finish(&feats)?,
        };
        let mut switched = Vec::new();
        if let Some((sw, path, ..)) = self.switch {
            switched = sw.files;
            let to = switch::stamped(&path);
            std::fs::rename(&path, &to)?;
            switched.push(to);
        }
        Ok(Written {
            tally: self.tally,
            records: self.records,
            bytes,
            switched,
        })
    }

    /// `--switch-output`: when it is time, finish the current file, name
    /// it with its time stamp and begin the next with the side band so far.
    pub(super) fn maybe_switch(&mut self) -> io::Result<()> {
        let bytes = match &self.writer {
            Out::File(w) => w.data_size(),
            _ => return Ok(()),
        };
        let Some((sw, path, attrs, cmdline)) = &mut self.switch else {
            return Ok(());
        };
        if !sw.due(bytes) {
            return Ok(());
        }
        let (path, attrs, cmdline) = (path.clone(), attrs.clone(), cmdline.clone());
        let mut feats = features(&cmdline, &self.tally, &mut Vec::new());
        feats.group_desc = self.groups.clone();
        if !self.build_ids {
            feats.build_ids.clear();
        }
        let mut raw = Vec::new();
        if let Some((c, len)) = &mut self.compressor {
            c.flush(&mut |r| self.writer.write_record(r))?;
            raw.push((feature::COMPRESSED, c.feature(*len)));
            *c = Compressor::new(c.level())?;
        }
        let mut new = FileSink::new(OutFile::create(&path, Options::default())?);
        new.begin(attrs, &feats)?;
        if let Out::File(w) = std::mem::replace(&mut self.writer, Out::File(Box::new(new))) {
            w.finish_with(&feats, &raw)?;
        }
        let to = switch::stamped(&path);
        std::fs::rename(&path, &to)?;
        let (sw, ..) = self.switch.as_mut().expect("switching");
        sw.files.push(to);
        sw.started = std::time::Instant::now();
        (self.tally.first_time, self.tally.last_time) = (None, None);
        for rec in sw.side_band.clone() {
            match &mut self.compressor {
                Some((c, _)) => c.add(&rec, &mut |r| self.writer.write_record(r))?,
                None => self.writer.write_record(&rec)?,
            }
        }
        if let (Out::File(w), Some((sw, ..))) = (&self.writer, &mut self.switch) {
            sw.base = w.data_size();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{comm_record, id_trailer};
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
            group: None,
        };
        let cmd = ["pmx".to_string(), "record".to_string()];
        let (mut sink, old) = Sink::create(
            Output::Path(&out),
            (&[attr], &[ev]),
            &[vec![7]],
            HashMap::new(),
            (&cmd, &FileOptions::default(), 1),
        )
        .unwrap();
        assert_eq!(old, Some(dir.path().join("t.data.old")));
        // The old file stays until the new one is complete.
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
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
        assert_eq!(
            std::fs::read(dir.path().join("t.data.old")).unwrap(),
            b"old"
        );
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
