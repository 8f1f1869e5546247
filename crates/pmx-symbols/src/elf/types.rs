//! Data types from DWARF (perf 6.8's data-type profiling, `--sort
//! type,typeoff`): which type, and which field of it, a memory access
//! touches. Two cases are answered, both from what DWARF states, never
//! guessed: a global variable holding the address (its `DW_OP_addr`
//! location; an array's element by the offset modulo the element's size),
//! and a variable whose value at the instruction is in the access's base
//! register (a `DW_OP_regN` location, plain or from a location list, of a
//! pointer type: the pointed-to type at the operand's displacement).
//! Everything else is unknown. Read on first use
//! ([`super::ElfFile::data_types`]).

use super::{Dwarf, Reader};
use gimli::{AttributeValue, Operation, Reader as _, UnitOffset};

/// The type an access touches: its name (`struct point`, `int`), the
/// offset in it and the field there (`y`, `pos.y`; empty: no field, as
/// at a base type or padding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeAt {
    /// The type's name as C writes it.
    pub name: String,
    /// The byte offset in the type.
    pub offset: u64,
    /// The field's path at that offset.
    pub field: String,
}

/// Where an access lands: a type (past arrays) of one unit and the offset
/// in it; what a [`TypeAt`] is made from, so equal spots name alike
/// (a cheap key to cache names by).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeSpot {
    unit: u32,
    ty: usize,
    offset: u64,
}

/// One binary's variables with a type, indexed for the two lookups.
pub struct DataTypes {
    dwarf: Dwarf,
    units: Vec<gimli::Unit<Reader>>,
    /// Global variables: (address, size, unit, type), by address.
    globals: Vec<(u64, u64, u32, UnitOffset)>,
    /// Functions: (start, end, unit, entry), by start.
    functions: Vec<(u64, u64, u32, UnitOffset)>,
}

/// A DIE's type reference within its unit (`DW_AT_type`).
fn type_of(unit: &gimli::Unit<Reader>, off: UnitOffset) -> Option<UnitOffset> {
    match unit.entry(off).ok()?.attr_value(gimli::DW_AT_type).ok()? {
        Some(AttributeValue::UnitRef(t)) => Some(t),
        _ => None,
    }
}

/// The single operation of a location expression.
fn single_op(
    unit: &gimli::Unit<Reader>,
    e: gimli::Expression<Reader>,
) -> Option<Operation<Reader>> {
    let mut ops = e.operations(unit.encoding());
    let op = ops.next().ok()??;
    matches!(ops.next(), Ok(None)).then_some(op)
}

impl DataTypes {
    /// The index of `dwarf` (`None`: no unit describes a variable).
    pub(super) fn read(dwarf: Dwarf) -> Option<DataTypes> {
        let mut t = DataTypes {
            units: Vec::new(),
            globals: Vec::new(),
            functions: Vec::new(),
            dwarf,
        };
        let mut headers = t.dwarf.units();
        while let Ok(Some(h)) = headers.next() {
            let Ok(unit) = t.dwarf.unit(h) else { continue };
            let u = t.units.len() as u32;
            t.index_unit(&unit, u);
            t.units.push(unit);
        }
        t.globals.sort_unstable_by_key(|g| g.0);
        t.functions.sort_unstable_by_key(|f| f.0);
        (!t.globals.is_empty() || !t.functions.is_empty()).then_some(t)
    }

    fn index_unit(&mut self, unit: &gimli::Unit<Reader>, u: u32) {
        let mut cursor = unit.entries();
        let mut depth = 0isize;
        while let Ok(Some((delta, die))) = cursor.next_dfs() {
            depth += delta;
            match die.tag() {
                gimli::DW_TAG_variable => {
                    let Ok(Some(AttributeValue::Exprloc(e))) =
                        die.attr_value(gimli::DW_AT_location)
                    else {
                        continue;
                    };
                    let addr = match single_op(unit, e) {
                        Some(Operation::Address { address }) => address,
                        Some(Operation::AddressIndex { index }) => {
                            match self.dwarf.address(unit, index) {
                                Ok(a) => a,
                                Err(_) => continue,
                            }
                        }
                        _ => continue,
                    };
                    let Some(ty) = type_of(unit, die.offset()) else {
                        continue;
                    };
                    let size = self.size(unit, ty).unwrap_or(0);
                    if size > 0 && addr != 0 {
                        self.globals.push((addr, size, u, ty));
                    }
                }
                gimli::DW_TAG_subprogram if depth <= 1 => {
                    let Ok(mut ranges) = self.dwarf.die_ranges(unit, die) else {
                        continue;
                    };
                    while let Ok(Some(r)) = ranges.next() {
                        if r.begin < r.end {
                            self.functions.push((r.begin, r.end, u, die.offset()));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Bytes of heap the index holds (its vectors; the units' own parse).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.globals.capacity() * 24
            + self.functions.capacity() * 32
            + self.units.len() * (std::mem::size_of::<gimli::Unit<Reader>>() + 256)
    }

    /// The global variable holding `vaddr`, and the type and field there.
    pub fn global(&self, vaddr: u64) -> Option<TypeAt> {
        self.name_spot(self.global_spot(vaddr)?)
    }

    /// Where in its type an access of the global variable holding `vaddr`
    /// lands ([`DataTypes::name_spot`] names it).
    pub fn global_spot(&self, vaddr: u64) -> Option<TypeSpot> {
        let i = self
            .globals
            .partition_point(|g| g.0 <= vaddr)
            .checked_sub(1)?;
        let (start, size, u, ty) = self.globals[i];
        if vaddr - start >= size {
            return None;
        }
        self.spot(u, ty, vaddr - start)
    }

    /// The type and field at `disp` from the pointer that the variable
    /// held in DWARF register `reg` at `pc` points to.
    pub fn through_register(&self, pc: u64, reg: u16, disp: i64) -> Option<TypeAt> {
        self.name_spot(self.register_spot(pc, reg, disp)?)
    }

    /// Where [`DataTypes::through_register`]'s access lands in its type.
    pub fn register_spot(&self, pc: u64, reg: u16, disp: i64) -> Option<TypeSpot> {
        let disp = u64::try_from(disp).ok()?;
        let end = self.functions.partition_point(|f| f.0 <= pc);
        let f = self.functions[..end].iter().rev().find(|f| pc < f.1)?;
        let unit = &self.units[f.2 as usize];
        let mut tree = unit.entries_tree(Some(f.3)).ok()?;
        let root = tree.root().ok()?;
        let ptr = self.register_variable(unit, root, pc, reg)?;
        let entry = unit.entry(self.strip(unit, ptr)?).ok()?;
        if entry.tag() != gimli::DW_TAG_pointer_type {
            return None;
        }
        let pointee = type_of(unit, entry.offset())?;
        if disp >= self.size(unit, pointee)? {
            return None;
        }
        self.spot(f.2, pointee, disp)
    }

    /// The type of the variable or parameter of `node`'s scope (and the
    /// lexical blocks holding `pc`) that is in register `reg` at `pc`.
    fn register_variable(
        &self,
        unit: &gimli::Unit<Reader>,
        node: gimli::EntriesTreeNode<'_, '_, '_, Reader>,
        pc: u64,
        reg: u16,
    ) -> Option<UnitOffset> {
        let mut children = node.children();
        while let Ok(Some(child)) = children.next() {
            let die = child.entry();
            let tag = die.tag();
            if matches!(tag, gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter)
                && self.in_register(unit, die, pc, reg)
            {
                return type_of(unit, die.offset());
            }
            if tag == gimli::DW_TAG_lexical_block && self.covers(unit, die, pc) {
                if let Some(t) = self.register_variable(unit, child, pc, reg) {
                    return Some(t);
                }
            }
        }
        None
    }

    /// Whether `die`'s address ranges hold `pc`.
    fn covers(
        &self,
        unit: &gimli::Unit<Reader>,
        die: &gimli::DebuggingInformationEntry<'_, '_, Reader>,
        pc: u64,
    ) -> bool {
        let Ok(mut ranges) = self.dwarf.die_ranges(unit, die) else {
            return false;
        };
        while let Ok(Some(r)) = ranges.next() {
            if r.begin <= pc && pc < r.end {
                return true;
            }
        }
        false
    }

    /// Whether variable `die`'s location at `pc` is register `reg` itself.
    fn in_register(
        &self,
        unit: &gimli::Unit<Reader>,
        die: &gimli::DebuggingInformationEntry<'_, '_, Reader>,
        pc: u64,
        reg: u16,
    ) -> bool {
        let is_reg = |e| matches!(single_op(unit, e), Some(Operation::Register { register }) if register.0 == reg);
        match die.attr_value(gimli::DW_AT_location) {
            Ok(Some(AttributeValue::Exprloc(e))) => is_reg(e),
            Ok(Some(v)) => {
                let Ok(Some(mut list)) = self.dwarf.attr_locations(unit, v) else {
                    return false;
                };
                while let Ok(Some(l)) = list.next() {
                    if l.range.begin <= pc && pc < l.range.end {
                        return is_reg(l.data);
                    }
                }
                false
            }
            _ => false,
        }
    }

    /// `ty` past typedefs and qualifiers.
    fn strip(&self, unit: &gimli::Unit<Reader>, mut ty: UnitOffset) -> Option<UnitOffset> {
        for _ in 0..16 {
            let e = unit.entry(ty).ok()?;
            match e.tag() {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => ty = type_of(unit, ty)?,
                _ => return Some(ty),
            }
        }
        None
    }

    /// A type's size in bytes (an array's: its element's times its
    /// counts).
    fn size(&self, unit: &gimli::Unit<Reader>, ty: UnitOffset) -> Option<u64> {
        let ty = self.strip(unit, ty)?;
        let e = unit.entry(ty).ok()?;
        if let Ok(Some(v)) = e.attr_value(gimli::DW_AT_byte_size) {
            return v.udata_value();
        }
        if e.tag() == gimli::DW_TAG_pointer_type {
            return Some(u64::from(unit.encoding().address_size));
        }
        if e.tag() != gimli::DW_TAG_array_type {
            return None;
        }
        let mut n = self.size(unit, type_of(unit, ty)?)?;
        let mut tree = unit.entries_tree(Some(ty)).ok()?;
        let root = tree.root().ok()?;
        let mut dims = root.children();
        while let Ok(Some(d)) = dims.next() {
            let d = d.entry();
            let count = match (
                d.attr_value(gimli::DW_AT_count),
                d.attr_value(gimli::DW_AT_upper_bound),
            ) {
                (Ok(Some(c)), _) => c.udata_value()?,
                (_, Ok(Some(u))) => u.udata_value()?.checked_add(1)?,
                _ => return None,
            };
            n = n.checked_mul(count)?;
        }
        Some(n)
    }

    /// The name C gives type `ty` (a typedef's own name; `struct NAME`).
    fn name(&self, unit: &gimli::Unit<Reader>, ty: UnitOffset) -> Option<String> {
        let e = unit.entry(ty).ok()?;
        let own = (e.attr_value(gimli::DW_AT_name).ok().flatten())
            .and_then(|v| self.dwarf.attr_string(unit, v).ok())
            .and_then(|s| s.to_string_lossy().ok().map(|s| s.into_owned()));
        let prefix = match e.tag() {
            gimli::DW_TAG_structure_type => "struct ",
            gimli::DW_TAG_union_type => "union ",
            gimli::DW_TAG_enumeration_type => "enum ",
            gimli::DW_TAG_class_type => "class ",
            gimli::DW_TAG_pointer_type => {
                let to = type_of(unit, ty).and_then(|t| self.name(unit, t));
                return Some(format!("{} *", to.as_deref().unwrap_or("void")));
            }
            gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type => {
                return self.name(unit, type_of(unit, ty)?);
            }
            _ => "",
        };
        Some(format!("{prefix}{}", own?))
    }

    /// Where `offset` lands in a variable of type `ty` of unit `u`: arrays
    /// down to their element (the offset modulo its size).
    fn spot(&self, u: u32, mut ty: UnitOffset, mut offset: u64) -> Option<TypeSpot> {
        let unit = &self.units[u as usize];
        loop {
            let s = self.strip(unit, ty)?;
            if unit.entry(s).ok()?.tag() != gimli::DW_TAG_array_type {
                break;
            }
            let elem = type_of(unit, s)?;
            offset %= self.size(unit, elem).filter(|&n| n > 0)?;
            ty = elem;
        }
        Some(TypeSpot {
            unit: u,
            ty: ty.0,
            offset,
        })
    }

    /// A spot's type and field: the name of the type reached, the field
    /// path through its members.
    pub fn name_spot(&self, spot: TypeSpot) -> Option<TypeAt> {
        let unit = self.units.get(spot.unit as usize)?;
        let (ty, offset) = (UnitOffset(spot.ty), spot.offset);
        // The name: a typedef's (an anonymous struct has only that one).
        let name = self
            .name(unit, ty)
            .or_else(|| self.name(unit, self.strip(unit, ty)?))?;
        let mut path = Vec::new();
        self.field(unit, ty, offset, &mut path);
        Some(TypeAt {
            name,
            offset,
            field: path.join("."),
        })
    }

    /// The members (nested: `a.b`) of struct or union `ty` covering `offset`.
    fn field(
        &self,
        unit: &gimli::Unit<Reader>,
        ty: UnitOffset,
        offset: u64,
        path: &mut Vec<String>,
    ) {
        let Some(mut ty) = self.strip(unit, ty) else {
            return;
        };
        let mut offset = offset;
        // Into arrays of a member.
        while let Ok(e) = unit.entry(ty) {
            if e.tag() != gimli::DW_TAG_array_type || path.len() > 16 {
                break;
            }
            let Some(elem) = type_of(unit, ty) else {
                return;
            };
            let Some(n) = self.size(unit, elem).filter(|&n| n > 0) else {
                return;
            };
            offset %= n;
            let Some(s) = self.strip(unit, elem) else {
                return;
            };
            ty = s;
        }
        let Ok(e) = unit.entry(ty) else { return };
        if !matches!(
            e.tag(),
            gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type | gimli::DW_TAG_class_type
        ) {
            return;
        }
        let Ok(mut tree) = unit.entries_tree(Some(ty)) else {
            return;
        };
        let Ok(root) = tree.root() else { return };
        let mut members = root.children();
        while let Ok(Some(m)) = members.next() {
            let m = m.entry();
            if m.tag() != gimli::DW_TAG_member {
                continue;
            }
            let at = match m.attr_value(gimli::DW_AT_data_member_location) {
                Ok(Some(v)) => v.udata_value(),
                _ => Some(0), // a union's members
            };
            let (Some(at), Some(mty)) = (at, type_of(unit, m.offset())) else {
                continue;
            };
            let Some(size) = self.size(unit, mty) else {
                continue;
            };
            if at <= offset && offset < at + size {
                let name = (m.attr_value(gimli::DW_AT_name).ok().flatten())
                    .and_then(|v| self.dwarf.attr_string(unit, v).ok())
                    .and_then(|s| s.to_string_lossy().ok().map(|s| s.into_owned()));
                path.push(name.unwrap_or_else(|| "(anon)".into()));
                self.field(unit, mty, offset - at, path);
                return;
            }
        }
    }
}
