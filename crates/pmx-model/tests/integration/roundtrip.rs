//! Property tests: every field of every layout round-trips.

use pmx_model::register::{FieldValue, RegisterKind};
use proptest::prelude::*;

fn kind() -> impl Strategy<Value = RegisterKind> {
    prop::sample::select(RegisterKind::ALL.to_vec())
}

proptest! {
    /// Any 64-bit value decodes to a field table that encodes back to it.
    #[test]
    fn decode_then_encode_is_identity(kind in kind(), v in any::<u64>()) {
        let layout = kind.layout();
        let fields = layout.decode(v);
        prop_assert_eq!(layout.encode_values(&fields).unwrap(), v);
    }

    /// Any table of in-range field values encodes to a value that decodes
    /// back to the same table, field by field.
    #[test]
    fn encode_then_decode_is_identity(kind in kind(), seed in prop::collection::vec(any::<u64>(), 64)) {
        let layout = kind.layout();
        let wanted: Vec<FieldValue> = layout
            .fields
            .iter()
            .zip(seed)
            .map(|(f, s)| FieldValue { field: *f, value: s & f.max_value() })
            .collect();
        let v = layout.encode_values(&wanted).unwrap();
        prop_assert_eq!(layout.decode(v), wanted.clone());
        // And by name, for the named fields.
        for fv in &wanted {
            if fv.field.kind != pmx_model::FieldKind::Reserved {
                prop_assert_eq!(layout.get(v, fv.field.name), Some(fv.value));
            }
        }
    }

    /// Setting a field never disturbs the others.
    #[test]
    fn set_touches_only_its_field(kind in kind(), v in any::<u64>(), idx in 0usize..64, x in any::<u64>()) {
        let layout = kind.layout();
        let f = layout.fields[idx % layout.fields.len()];
        let nv = layout.set_field(v, &f, x & f.max_value()).unwrap();
        prop_assert_eq!(nv & !f.mask(), v & !f.mask());
        prop_assert_eq!(f.get(nv), x & f.max_value());
    }

    /// The spec parser never panics, whatever it is given.
    #[test]
    fn parser_never_panics(s in "\\PC{0,40}") {
        let _ = pmx_model::spec::parse_spec(&s);
    }

    /// Specs built from arbitrary field values parse and encode to exactly
    /// those values.
    #[test]
    fn intel_terms_encode_exactly(event in 0u64..=0xff, umask in 0u64..=0xff, cmask in 0u64..=0xff,
                                  edge in any::<bool>(), inv in any::<bool>(), u in any::<bool>()) {
        let mut s = format!("cpu/event={event:#x},umask={umask},cmask={cmask:#x}");
        if edge { s.push_str(",edge"); }
        if inv { s.push_str(",inv"); }
        s.push('/');
        if u { s.push('u'); }
        let spec = pmx_model::spec::parse_spec(&s).unwrap();
        let e = pmx_model::encoding::encode_spec(&spec, pmx_model::EncodeOptions { arch: pmx_model::Arch::Intel, sampling: false }).unwrap();
        let config = event | umask << 8 | (edge as u64) << 18 | (inv as u64) << 23 | cmask << 24;
        prop_assert_eq!(e.attr.config, config);
        let privs = if u { 1 << 16 } else { 3 << 16 };
        prop_assert_eq!(e.register, config | privs | 1 << 22);
    }
}
