//! Canonical JSON written straight from a `Serialize` value, with no `serde_json::Value` tree
//! in between: the bytes of [`crate::identity::canonical_json`] of
//! `serde_json::to_value(value)`, for keys computed per case (stage caches, judgments), where
//! building the tree (a `String` per string, an index map per object) cost more than hashing.
//!
//! Each object's entries are written to their own buffers, then sorted by the UTF-8 bytes of
//! their keys (a key given twice keeps its last value, as `to_value` does); arrays and scalars
//! are written in place. Scalars are printed as `to_value` then `serde_json` print them: an
//! `f32` widened to `f64` first, a non-finite float as `null`, integer map keys as strings,
//! a `serde_json::value::RawValue` as its parsed value.

use serde::ser::{self, Impossible, Serialize};

/// Why a value has no canonical JSON (what `serde_json::to_value` refuses too).
#[derive(Debug)]
pub(crate) struct CanonicalError(String);

impl std::fmt::Display for CanonicalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CanonicalError {}

impl ser::Error for CanonicalError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        CanonicalError(msg.to_string())
    }
}

type Result<T> = std::result::Result<T, CanonicalError>;

/// serde_json's marker for a `RawValue` (a struct of this name with one field of this name).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Appends the canonical JSON of `value` to `out`.
pub(crate) fn write<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<()> {
    value.serialize(Writer { out })
}

/// A JSON string or number as `serde_json` prints it, appended to `out` (the one scalar
/// writer of canonical JSON, from a value tree or straight from a value).
pub(crate) fn scalar<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    // A string or a number written into a `Vec` cannot fail.
    serde_json::to_writer(&mut *out, value).expect("a JSON scalar serialises");
}

fn float(value: f64, out: &mut Vec<u8>) {
    if value.is_finite() {
        scalar(&value, out);
    } else {
        out.extend_from_slice(b"null");
    }
}

/// Writes one value in place.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

/// The entries of an object being written, sorted when it ends.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    entries: Vec<(String, Vec<u8>)>,
    next_key: Option<String>,
    /// A variant's name, for `{"Variant": {…}}`.
    variant: Option<&'static str>,
    /// A `RawValue`: its one field is JSON text to parse.
    raw: bool,
}

/// An array being written in place.
struct Array<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
    /// A tuple variant's name, for `{"Variant": […]}`.
    variant: Option<&'static str>,
}

fn end_object(out: &mut Vec<u8>, mut entries: Vec<(String, Vec<u8>)>) {
    // Stable, so that of a key given twice the last value is the one kept, as in `to_value`.
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.push(b'{');
    let mut first = true;
    for (i, (key, value)) in entries.iter().enumerate() {
        if entries.get(i + 1).is_some_and(|next| next.0 == *key) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        scalar(key.as_str(), out);
        out.push(b':');
        out.extend_from_slice(value);
    }
    out.push(b'}');
}

fn open_variant(out: &mut Vec<u8>, variant: &str) {
    out.push(b'{');
    scalar(variant, out);
    out.push(b':');
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = CanonicalError;
    type SerializeSeq = Array<'a>;
    type SerializeTuple = Array<'a>;
    type SerializeTupleStruct = Array<'a>;
    type SerializeTupleVariant = Array<'a>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Object<'a>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<()> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<()> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<()> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<()> {
        scalar(&v, self.out);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<()> {
        // As `to_value`: a number when it fits 64 bits, else an error.
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(v), _) => self.serialize_i64(v),
            (_, Ok(v)) => self.serialize_u64(v),
            _ => Err(ser::Error::custom("number out of range")),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<()> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<()> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<()> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<()> {
        scalar(&v, self.out);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<()> {
        match u64::try_from(v) {
            Ok(v) => self.serialize_u64(v),
            Err(_) => Err(ser::Error::custom("number out of range")),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<()> {
        // `to_value` keeps an f32 as the f64 of the same value.
        float(f64::from(v), self.out);
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        float(v, self.out);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<()> {
        scalar(&v, self.out);
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<()> {
        scalar(v, self.out);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        // As `to_value`: an array of numbers.
        let mut seq = ser::Serializer::serialize_seq(self, Some(v.len()))?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        ser::SerializeSeq::end(seq)
    }
    fn serialize_none(self) -> Result<()> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<()> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<()> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<()> {
        open_variant(self.out, variant);
        value.serialize(Writer {
            out: &mut *self.out,
        })?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Array<'a>> {
        self.out.push(b'[');
        Ok(Array {
            out: self.out,
            first: true,
            variant: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Array<'a>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Array<'a>> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Array<'a>> {
        open_variant(self.out, variant);
        self.out.push(b'[');
        Ok(Array {
            out: self.out,
            first: true,
            variant: Some(variant),
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Object<'a>> {
        Ok(Object {
            out: self.out,
            entries: Vec::with_capacity(len.unwrap_or(0)),
            next_key: None,
            variant: None,
            raw: false,
        })
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Object<'a>> {
        let mut object = self.serialize_map(Some(len))?;
        object.raw = name == RAW_VALUE_TOKEN;
        Ok(object)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Object<'a>> {
        let mut object = self.serialize_map(Some(len))?;
        object.variant = Some(variant);
        Ok(object)
    }
}

impl Array<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        value.serialize(Writer {
            out: &mut *self.out,
        })
    }

    fn close(self) -> Result<()> {
        self.out.push(b']');
        if self.variant.is_some() {
            self.out.push(b'}');
        }
        Ok(())
    }
}

/// The four array-shaped `serde` traits, each writing its elements in place.
macro_rules! array_like {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Array<'_> {
            type Ok = ();
            type Error = CanonicalError;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
                self.element(value)
            }
            fn end(self) -> Result<()> {
                self.close()
            }
        }
    )*};
}

array_like!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl Object<'_> {
    fn entry<T: Serialize + ?Sized>(&mut self, key: String, value: &T) -> Result<()> {
        let mut buffer = Vec::new();
        write(value, &mut buffer)?;
        self.entries.push((key, buffer));
        Ok(())
    }

    fn close(self) -> Result<()> {
        if let Some(variant) = self.variant {
            open_variant(self.out, variant);
            end_object(self.out, self.entries);
            self.out.push(b'}');
        } else {
            end_object(self.out, self.entries);
        }
        Ok(())
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.next_key = Some(key.serialize(KeyWriter)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let key = self
            .next_key
            .take()
            .ok_or_else(|| ser::Error::custom("a map value without its key"))?;
        self.entry(key, value)
    }
    fn end(self) -> Result<()> {
        self.close()
    }
}

impl ser::SerializeStruct for Object<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        if self.raw {
            // The raw JSON text: its canonical JSON is that of the value it holds.
            let text = serde_json::to_value(value)
                .map_err(ser::Error::custom)?
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| ser::Error::custom("a raw JSON value that is not text"))?;
            let parsed: serde_json::Value =
                serde_json::from_str(&text).map_err(ser::Error::custom)?;
            crate::identity::write_canonical_value(&parsed, self.out);
            return Ok(());
        }
        self.entry(key.to_string(), value)
    }
    fn end(self) -> Result<()> {
        if self.raw {
            return Ok(());
        }
        self.close()
    }
}

impl ser::SerializeStructVariant for Object<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        self.entry(key.to_string(), value)
    }
    fn end(self) -> Result<()> {
        self.close()
    }
}

/// A map key as `to_value` makes it: a string as it is, a number or a boolean as its text,
/// a unit variant as its name; anything else refused, as `to_value` refuses it.
struct KeyWriter;

fn key_must_be_a_string() -> CanonicalError {
    ser::Error::custom("key must be a string")
}

impl ser::Serializer for KeyWriter {
    type Ok = String;
    type Error = CanonicalError;
    type SerializeSeq = Impossible<String, CanonicalError>;
    type SerializeTuple = Impossible<String, CanonicalError>;
    type SerializeTupleStruct = Impossible<String, CanonicalError>;
    type SerializeTupleVariant = Impossible<String, CanonicalError>;
    type SerializeMap = Impossible<String, CanonicalError>;
    type SerializeStruct = Impossible<String, CanonicalError>;
    type SerializeStructVariant = Impossible<String, CanonicalError>;

    fn serialize_bool(self, v: bool) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_i128(self, v: i128) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_u128(self, v: u128) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<String> {
        // serde_json prints a finite float key in the same shortest form as the number.
        float_key(v.is_finite(), || serde_json::to_string(&v))
    }
    fn serialize_f64(self, v: f64) -> Result<String> {
        float_key(v.is_finite(), || serde_json::to_string(&v))
    }
    fn serialize_char(self, v: char) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<String> {
        Err(key_must_be_a_string())
    }
    fn serialize_none(self) -> Result<String> {
        Err(key_must_be_a_string())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<String> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit(self) -> Result<String> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<String> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<String> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<String> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<String> {
        Err(key_must_be_a_string())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(key_must_be_a_string())
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(key_must_be_a_string())
    }
}

/// A float map key as `to_value` makes it: its shortest form when finite, else refused.
fn float_key(finite: bool, text: impl FnOnce() -> serde_json::Result<String>) -> Result<String> {
    if !finite {
        return Err(ser::Error::custom("float key must be finite"));
    }
    text().map_err(ser::Error::custom)
}
