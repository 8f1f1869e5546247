//! The replay of a memory report: side band applied in time order per
//! round (as perf does, so a sample sees the maps of its moment), each
//! sample's instruction and data address resolved (the data address in
//! the maps of the sample's own mode: a kernel sample's data in the
//! kernel's maps, a user sample's in its process's), handed on resolved.

use pmx_perfdata::format::{misc, sample_type};
use pmx_perfdata::read::Record;
use pmx_perfdata::Reader;
use pmx_symbols::elf::types::TypeSpot;
use pmx_symbols::symbolize::{DataObject, DsoId, FrameId, MappedInode, PerfDataSymbol, Symbolizer};
use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;

/// A memory sample as its row keys need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemSample {
    pub(crate) event: usize,
    pub(crate) kernel: bool,
    pub(crate) frame: FrameId,
    pub(crate) comm: u32,
    pub(crate) addr: u64,
    /// The data address's mapping: an id of [`Resolver::objects`].
    pub(crate) object: Option<u32>,
    /// The data address in its mapping (perf's `al_addr`: the file offset
    /// in a file's mapping, the address itself in anonymous memory).
    pub(crate) data_rel: u64,
    pub(crate) data_src: u64,
    pub(crate) weight: u64,
    pub(crate) ins_lat: u16,
    pub(crate) phys_addr: u64,
    pub(crate) data_page_size: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) cpu: u32,
    pub(crate) ip: u64,
    /// The data address is in a user mapping perf takes for anonymous
    /// (its lines are per process).
    pub(crate) anon: bool,
    /// The data object: an id of [`Resolver::data_names`] (`u32::MAX`:
    /// not asked for).
    pub(crate) dobj: u32,
    /// The data type and the type, offset and field: ids of
    /// [`Resolver::type_names`] (`u32::MAX`: not asked for).
    pub(crate) dtype: (u32, u32),
    /// perf 6.1's symbol of the data address: an id of
    /// [`Resolver::perf_symbols`] (`u32::MAX`: none, or not asked for).
    pub(crate) dsym: u32,
}

/// A queued sample: the fields of its record a memory sample is made of.
#[derive(Debug, Clone, Copy)]
struct Queued {
    event: u32,
    misc: u16,
    ins_lat: u16,
    pid: u32,
    tid: u32,
    cpu: u32,
    ip: u64,
    addr: u64,
    data_src: u64,
    weight: u64,
    phys_addr: u64,
    data_page_size: u64,
}

/// What a data object is keyed by: a kernel sample's kernel map, a user
/// sample's object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum DataKey {
    Kernel(Option<u32>),
    User(DataObject),
}

/// A user MMAP's pid, start, length, file offset, path and inode.
type UserMap = (u32, u64, u64, u64, Vec<u8>, Option<MappedInode>);

/// A record waiting for its round (small: a file without rounds queues
/// every sample; a sample's fields wait in [`Queue::samples`]).
enum Item {
    Sample(u32),
    Comm(u32, u32),
    Fork(u32, u32, u32, u32),
    Mmap(Box<UserMap>),
    KernelMap(Box<(u64, u64, u64, String)>),
}

/// The records of the rounds not yet applied: each with its time, the
/// samples' fields apart.
#[derive(Default)]
struct Queue {
    items: Vec<(u64, Item)>,
    samples: Vec<Queued>,
}

/// The symbolizer, command names, kernel maps and data objects of a replay.
pub(crate) struct Resolver {
    pub(crate) sym: Symbolizer,
    pub(crate) comms: Vec<String>,
    comm_ids: HashMap<Vec<u8>, u32>,
    thread_comm: HashMap<u32, u32>,
    /// The kernel's and modules' maps: start, end, object id, offset.
    kernel_maps: Vec<(u64, u64, u32, u64)>,
    /// Data objects' names (perf's Data Object column).
    pub(crate) objects: Vec<String>,
    /// Each data object's file as perf's `dso__cmp_id` orders it (device
    /// and inode of the first MMAP2 of its path; zeros: anonymous memory,
    /// the kernel, or a file of no MMAP2).
    pub(crate) object_inodes: Vec<(u32, u32, u64, u64)>,
    /// The inode of each mapped path's first MMAP2.
    path_inodes: HashMap<Vec<u8>, MappedInode>,
    object_ids: HashMap<String, u32>,
    /// Each binary's object id, once named, and whether perf maps it one
    /// to one (anonymous memory, the heap, stacks).
    dso_objects: HashMap<u32, (u32, bool)>,
    /// Data objects' names (pmx's `symbol_daddr`), when asked for
    /// ([`Resolver::name_data_objects`]).
    pub(crate) data_names: Vec<String>,
    data_ids: Option<HashMap<DataKey, u32>>,
    /// Data types' and fields' names (`type`, `typeoff`), when asked for
    /// ([`Resolver::name_data_types`]).
    pub(crate) type_names: Vec<String>,
    type_ids: Option<HashMap<String, u32>>,
    /// Each instruction's type through its memory operand's base
    /// register (DWARF's answer for the instruction), found once.
    operands: HashMap<(u32, u64), Option<(DsoId, TypeSpot)>>,
    /// The type ids of each spot (`None`: unknown), named once.
    spot_ids: HashMap<Option<(DsoId, TypeSpot)>, (u32, u32)>,
    /// perf 6.1's data symbols (`symbol_daddr` under perf's name), when
    /// asked for ([`Resolver::name_perf_symbols`]): the name and, for an
    /// object (`NAME+0xOFF`), its start as a file offset.
    pub(crate) perf_symbols: Vec<(String, Option<u64>)>,
    perf_symbol_ids: Option<HashMap<PerfDataSymbol, u32>>,
    here: bool,
    kernel_loaded: bool,
    cache_dir: Option<PathBuf>,
}

impl Resolver {
    pub(crate) fn new(sym: Symbolizer, here: bool, cache_dir: Option<PathBuf>) -> Resolver {
        Resolver {
            sym,
            comms: Vec::new(),
            comm_ids: HashMap::default(),
            thread_comm: HashMap::default(),
            kernel_maps: Vec::new(),
            objects: Vec::new(),
            object_inodes: Vec::new(),
            path_inodes: HashMap::default(),
            object_ids: HashMap::default(),
            dso_objects: HashMap::default(),
            data_names: Vec::new(),
            data_ids: None,
            type_names: Vec::new(),
            type_ids: None,
            operands: HashMap::default(),
            spot_ids: HashMap::default(),
            perf_symbols: Vec::new(),
            perf_symbol_ids: None,
            here,
            kernel_loaded: false,
            cache_dir,
        }
    }

    /// The resolver of the recording `reader` reads: its build-ids,
    /// binaries under `root` (perf's `--symfs`), the running kernel's
    /// symbols when the file was recorded on it.
    pub(crate) fn for_reader(
        reader: &Reader,
        root: Option<PathBuf>,
        symbols: &pmx_symbols::SymbolOptions,
    ) -> Resolver {
        let this = pmx_profile::MachineId::current();
        let here = pmx_profile::profile::kernel_is_here(reader.features(), &this);
        let sym = Symbolizer::for_reader(reader, here, root, symbols);
        Resolver::new(sym, here, symbols.dirs.cache.clone())
    }

    /// Name each sample's data address by its object (pmx's own
    /// `symbol_daddr`).
    pub(crate) fn name_data_objects(&mut self) {
        self.data_ids = Some(HashMap::default());
    }

    /// Name each user sample's data type and field (`type`, `typeoff`).
    pub(crate) fn name_data_types(&mut self) {
        self.type_ids = Some(HashMap::default());
    }

    /// Name each user sample's data address as perf 6.1 does (the symbol
    /// of the mapped binary's table covering it).
    pub(crate) fn name_perf_symbols(&mut self) {
        self.perf_symbol_ids = Some(HashMap::default());
    }

    /// The id of a user sample's perf data symbol.
    fn perf_symbol(&mut self, s: &MemSample) -> u32 {
        if s.kernel || s.anon || s.object.is_none() || self.perf_symbol_ids.is_none() {
            return u32::MAX;
        }
        let Some((sym, off)) = self.sym.perf_data_symbol(s.pid, s.addr) else {
            return u32::MAX;
        };
        let ids = self.perf_symbol_ids.get_or_insert_with(Default::default);
        if let Some(&id) = ids.get(&sym) {
            return id;
        }
        let id = self.perf_symbols.len() as u32;
        ids.insert(sym, id);
        let start = sym.object.then(|| s.data_rel.wrapping_sub(off));
        let name = self.sym.perf_data_symbol_name(sym);
        self.perf_symbols.push((name, start));
        id
    }

    fn type_id(&mut self, name: String) -> u32 {
        let ids = self.type_ids.get_or_insert_with(Default::default);
        if let Some(&id) = ids.get(&name) {
            return id;
        }
        let id = self.type_names.len() as u32;
        ids.insert(name.clone(), id);
        self.type_names.push(name);
        id
    }

    /// The ids of a user sample's data type and of its type, offset and
    /// field (`(unknown)` where DWARF does not say): the spot of the
    /// global holding the address, else the instruction's (found once per
    /// instruction), each spot named once.
    fn data_type(&mut self, s: &MemSample) -> (u32, u32) {
        if self.type_ids.is_none() {
            return (u32::MAX, u32::MAX);
        }
        let spot = match s.kernel {
            true => None,
            false => match self.sym.global_type_spot(s.pid, s.addr) {
                Some(g) => Some(g),
                None => self.register_spot(s.pid, s.ip),
            },
        };
        if let Some(&ids) = self.spot_ids.get(&spot) {
            return ids;
        }
        let t = spot.and_then(|(dso, spot)| self.sym.type_at_spot(dso, spot));
        let (name, off) = match t {
            Some(t) if t.field.is_empty() => (t.name.clone(), format!("{} +{}", t.name, t.offset)),
            Some(t) => (
                t.name.clone(),
                format!("{} +{} ({})", t.name, t.offset, t.field),
            ),
            None => ("(unknown)".into(), "(unknown)".into()),
        };
        let ids = (self.type_id(name), self.type_id(off));
        self.spot_ids.insert(spot, ids);
        ids
    }

    /// The type spot of the instruction at `ip` through its memory
    /// operand's base register, decoded and looked up once.
    fn register_spot(&mut self, pid: u32, ip: u64) -> Option<(DsoId, TypeSpot)> {
        if let Some(&spot) = self.operands.get(&(pid, ip)) {
            return spot;
        }
        let code = self.sym.user_code(pid, ip, 15);
        let base = code.and_then(|c| super::types::memory_operand(&c, ip));
        let spot = base.and_then(|b| self.sym.register_type_spot(pid, ip, b));
        self.operands.insert((pid, ip), spot);
        spot
    }

    /// The id of a sample's data object when they are named (pmx's
    /// `symbol_daddr`).
    fn data_object(&mut self, s: &MemSample) -> u32 {
        match self.data_ids {
            Some(_) => self.object_id(s),
            None => u32::MAX,
        }
    }

    /// The id of a sample's data object (an id of
    /// [`Resolver::data_names`]), named on first sight.
    pub(crate) fn object_id(&mut self, s: &MemSample) -> u32 {
        let key = if s.kernel {
            DataKey::Kernel(s.object)
        } else {
            DataKey::User(self.sym.data_object(s.pid, s.addr))
        };
        let ids = self.data_ids.get_or_insert_with(Default::default);
        if let Some(&id) = ids.get(&key) {
            return id;
        }
        let id = self.data_names.len() as u32;
        ids.insert(key, id);
        let name = match key {
            DataKey::Kernel(Some(o)) => self.objects[o as usize].clone(),
            DataKey::User(d) => self.data_name(d),
            DataKey::Kernel(None) => "[unknown]".into(),
        };
        self.data_names.push(name);
        id
    }

    /// A user data object's name: its symbol, `[heap]`, `[stack]`,
    /// `[anon]`, `[BINARY data]` (a binary's memory no object covers),
    /// `[unknown]` (no mapping).
    fn data_name(&self, d: DataObject) -> String {
        match d {
            DataObject::Symbol { dso, index } => match self.sym.data_symbol(dso, index) {
                Some((name, _, _)) => name,
                None => format!("[{} data]", self.sym.dso(dso).short),
            },
            DataObject::Binary(dso) => format!("[{} data]", self.sym.dso(dso).short),
            DataObject::Heap => "[heap]".into(),
            DataObject::Stack => "[stack]".into(),
            DataObject::Anon => "[anon]".into(),
            DataObject::Unmapped => "[unknown]".into(),
        }
    }

    fn intern_comm(&mut self, name: &[u8]) -> u32 {
        if let Some(&id) = self.comm_ids.get(name) {
            return id;
        }
        let id = self.comms.len() as u32;
        self.comms.push(String::from_utf8_lossy(name).into_owned());
        self.comm_ids.insert(name.to_vec(), id);
        id
    }

    fn object(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.object_ids.get(name) {
            return id;
        }
        let id = self.objects.len() as u32;
        self.objects.push(name.to_string());
        self.object_inodes.push((0, 0, 0, 0));
        self.object_ids.insert(name.to_string(), id);
        id
    }

    /// The data object id of binary `dso` (its short name), made on
    /// first sight with the inode of its path's first MMAP2, and whether
    /// perf maps the binary's addresses one to one: anonymous memory, the
    /// heap and stacks (files by their offsets).
    fn dso_object(&mut self, dso: DsoId) -> (u32, bool) {
        if let Some(&id) = self.dso_objects.get(&dso) {
            return id;
        }
        let d = self.sym.dso(dso);
        let (name, path) = (d.short.clone(), d.path.as_bytes());
        let identity = [
            "//anon",
            "/dev/zero",
            "/anon_hugepage",
            "[stack",
            "/SYSV",
            "[heap]",
        ]
        .iter()
        .any(|p| d.path.starts_with(p));
        let inode = self.path_inodes.get(path).copied();
        let id = self.object(&name);
        let known = &mut self.object_inodes[id as usize];
        if let Some(i) = inode.filter(|_| known.2 == 0) {
            *known = (i.maj, i.min, i.ino, i.generation);
        }
        self.dso_objects.insert(dso, (id, identity));
        (id, identity)
    }

    fn kernel_frame(&mut self, addr: u64) -> FrameId {
        if !self.kernel_loaded {
            self.kernel_loaded = true;
            if self.here {
                let k = pmx_symbols::kcache::load(self.cache_dir.as_deref()).0;
                self.sym.resolve_deferred(k);
            }
        }
        self.sym.kernel_frame(addr)
    }

    fn apply(
        &mut self,
        item: Item,
        samples: &[Queued],
        out: &mut dyn FnMut(&MemSample, &mut Resolver),
    ) {
        match item {
            Item::Sample(i) => {
                let q = samples[i as usize];
                let (pid, tid, ip) = (q.pid, q.tid, q.ip);
                let mut s = MemSample {
                    event: q.event as usize,
                    kernel: false,
                    frame: 0,
                    comm: 0,
                    addr: q.addr,
                    object: None,
                    data_rel: q.addr,
                    data_src: q.data_src,
                    weight: q.weight,
                    ins_lat: q.ins_lat,
                    phys_addr: q.phys_addr,
                    data_page_size: q.data_page_size,
                    pid,
                    tid,
                    cpu: q.cpu,
                    ip,
                    anon: false,
                    dobj: u32::MAX,
                    dtype: (u32::MAX, u32::MAX),
                    dsym: u32::MAX,
                };
                let mode = q.misc & misc::CPUMODE_MASK;
                s.kernel =
                    mode == misc::KERNEL || (mode != misc::USER && ip >= 0xffff_8000_0000_0000);
                let thread = self.thread_comm.get(&tid);
                s.comm = match thread.or_else(|| self.thread_comm.get(&pid)) {
                    Some(&c) => c,
                    None if tid == 0 => self.intern_comm(b"swapper"),
                    None => self.intern_comm(format!(":{tid}").as_bytes()),
                };
                if s.kernel {
                    s.frame = self.kernel_frame(ip);
                    let at = self
                        .kernel_maps
                        .iter()
                        .find(|m| m.0 <= s.addr && s.addr < m.1);
                    s.object = at.map(|m| m.2);
                    s.data_rel = at.map_or(s.addr, |m| (s.addr - m.0).wrapping_add(m.3));
                } else {
                    s.frame = self.sym.user_frame(pid, ip);
                    let map = self.sym.mapping(pid, s.addr);
                    s.object = map.map(|(start, _, pgoff, dso)| {
                        let (id, identity) = self.dso_object(dso);
                        if !identity {
                            s.data_rel = (s.addr.wrapping_sub(start)).wrapping_add(pgoff);
                        }
                        s.anon = identity;
                        id
                    });
                }
                s.dobj = self.data_object(&s);
                s.dtype = self.data_type(&s);
                s.dsym = self.perf_symbol(&s);
                out(&s, self);
            }
            Item::Comm(tid, comm) => {
                self.thread_comm.insert(tid, comm);
            }
            Item::Fork(pid, ppid, tid, ptid) => {
                let parent = self.thread_comm.get(&ptid).or(self.thread_comm.get(&ppid));
                if let Some(&c) = parent {
                    self.thread_comm.insert(tid, c);
                }
                self.sym.fork(ppid, pid);
            }
            Item::Mmap(m) => {
                let (pid, start, len, pgoff, path, inode) = *m;
                if let Some(i) = inode.filter(|_| !self.path_inodes.contains_key(&path)) {
                    self.path_inodes.insert(path.clone(), i);
                }
                self.sym.add_mapping(pid, start, len, pgoff, &path, None);
            }
            Item::KernelMap(m) => {
                let (start, end, pgoff, name) = *m;
                let id = self.object(&name);
                self.kernel_maps.push((start, end, id, pgoff));
            }
        }
    }
}

/// perf's name of a kernel map: `[kernel.kallsyms]` for the kernel's
/// text, `[module]` for a module's file (`-` as `_`).
fn kernel_map_name(path: &[u8]) -> String {
    let p = String::from_utf8_lossy(path);
    if p.starts_with("[kernel.kallsyms]") {
        return "[kernel.kallsyms]".into();
    }
    let base = p.rsplit('/').next().unwrap_or(&p);
    let stem = base.strip_suffix(".ko").unwrap_or(base);
    format!("[{}]", stem.replace('-', "_"))
}

/// The queued form of a record and its time (`None`: not used).
fn item(
    rec: Record<'_>,
    memory: &[bool],
    resolver: &mut Resolver,
    samples: &mut Vec<Queued>,
) -> Option<(u64, Item)> {
    Some(match rec {
        Record::Sample(s) => {
            if !memory.get(s.event).copied().unwrap_or(false) {
                return None;
            }
            samples.push(Queued {
                event: s.event as u32,
                misc: s.misc,
                ins_lat: s.ins_lat,
                pid: s.pid,
                tid: s.tid,
                cpu: s.cpu,
                ip: s.ip,
                addr: s.addr,
                data_src: s.data_src,
                weight: s.weight,
                phys_addr: s.phys_addr,
                data_page_size: s.data_page_size,
            });
            (s.time, Item::Sample(samples.len() as u32 - 1))
        }
        Record::Comm(c) => {
            let comm = resolver.intern_comm(c.comm);
            (c.id.time.unwrap_or(0), Item::Comm(c.tid, comm))
        }
        Record::Fork(t) => (t.time, Item::Fork(t.pid, t.ppid, t.tid, t.ptid)),
        Record::Mmap(m) if m.pid == u32::MAX || m.misc & misc::CPUMODE_MASK == misc::KERNEL => {
            let end = m.start.saturating_add(m.len);
            let name = kernel_map_name(m.filename);
            let map = Box::new((m.start, end, m.pgoff, name));
            (m.id.time.unwrap_or(0), Item::KernelMap(map))
        }
        Record::Mmap(m) => {
            let map = (m.pid, m.start, m.len, m.pgoff, m.filename.to_vec(), m.inode);
            (m.id.time.unwrap_or(0), Item::Mmap(Box::new(map)))
        }
        _ => return None,
    })
}

impl Queue {
    /// Apply the records up to time `limit` in time order (stable:
    /// records of one time keep their order); the samples' fields of
    /// those applied are let go.
    fn flush(
        &mut self,
        limit: u64,
        r: &mut Resolver,
        out: &mut dyn FnMut(&MemSample, &mut Resolver),
    ) {
        if !self.items.is_sorted_by_key(|(t, _)| *t) {
            self.items.sort_by_key(|(t, _)| *t);
        }
        let n = self.items.partition_point(|(t, _)| *t <= limit);
        for (_, item) in self.items.drain(..n) {
            r.apply(item, &self.samples, out);
        }
        if self.items.is_empty() {
            self.samples.clear();
        } else if self.samples.len() > 2 * self.items.len() + 4096 {
            let mut kept = Vec::with_capacity(self.items.len());
            for (_, item) in &mut self.items {
                if let Item::Sample(i) = item {
                    kept.push(self.samples[*i as usize]);
                    *i = kept.len() as u32 - 1;
                }
            }
            self.samples = kept;
        }
    }
}

/// Replay every record of `reader`, giving each memory sample (one with
/// ADDR or DATA_SRC), resolved, to `out`.
pub(crate) fn run(
    reader: &mut Reader,
    resolver: &mut Resolver,
    out: &mut dyn FnMut(&MemSample, &mut Resolver),
) -> Result<(), pmx_perfdata::Error> {
    let memory_of = |reader: &Reader| -> Vec<bool> {
        (reader.events().iter())
            .map(|e| e.attr.sample_type & (sample_type::ADDR | sample_type::DATA_SRC) != 0)
            .collect()
    };
    let mut memory = memory_of(reader);
    let mut queue = Queue::default();
    let (mut max_time, mut prev_round_max) = (0u64, 0u64);
    loop {
        if reader.events().len() != memory.len() {
            memory = memory_of(reader); // a pipe's attrs come in the stream
        }
        let Some(rec) = reader.next_record()? else {
            break;
        };
        if let Record::FinishedRound = rec {
            queue.flush(prev_round_max, resolver, out);
            prev_round_max = max_time;
            continue;
        }
        if let Some((time, it)) = item(rec, &memory, resolver, &mut queue.samples) {
            max_time = max_time.max(time);
            queue.items.push((time, it));
            if queue.items.len() >= 1 << 20 {
                queue.flush(u64::MAX, resolver, out);
            }
        }
    }
    queue.flush(u64::MAX, resolver, out);
    Ok(())
}
