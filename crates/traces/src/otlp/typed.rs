//! The fast path of the OTLP JSON reader: one JSON Lines line of `TracesData` deserialized
//! straight into [`Span`]s by hand-written serde visitors that borrow the line's strings,
//! instead of a `serde_json::Value` tree (an ordered map per object, per attribute and per
//! `AnyValue`) walked afterwards.
//!
//! It reads only *clean* lines — the shapes real writers produce, with no problem to report —
//! and answers `None` for anything else: a field of an unexpected type, a key given twice
//! (camelCase and snake_case at once), a bad id, timestamp or attribute, an `AnyValue` with two
//! keys. The caller then reads the line again with the `Value` reader
//! ([`super::decode_json_value`]), which counts and locates the problems. So the fast path
//! decides nothing on its own: for every line it accepts, it returns exactly the spans the
//! `Value` reader would (the property `typed_matches_value_reader` in the tests checks this on
//! randomized lines), and every other line goes to the one reader that reports problems.
//!
//! Keys it does not read are skipped by [`Skip`], which visits them as `Value` would (the same
//! nesting limit and number range checks), so a line the `Value` reader rejects as not JSON is
//! never accepted here.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Number, Value};

use super::{code_of, decode_id, kind_name};
use crate::span::{Attributes, Location, Span, SpanEvent, SpanStatus};

/// The spans of one clean line (and how many were read: all of them), or `None` when the line
/// must be read by the `Value` reader.
pub(super) fn decode_line(line: &str, at: &Location) -> Option<Vec<Span>> {
    let mut de = serde_json::Deserializer::from_str(line);
    let data = TracesData::deserialize(&mut de).ok()?;
    de.end().ok()?;
    let mut out = Vec::new();
    for rs in data.resource_spans {
        let resource = std::sync::Arc::new(rs.resource_attributes.map(|a| a.0).unwrap_or_default());
        for scope in [rs.scope_spans, rs.scope_spans_snake, rs.library_spans]
            .into_iter()
            .flatten()
            .flatten()
        {
            for raw in scope.spans.into_iter().flatten() {
                out.push(span(raw, &resource, at)?);
            }
        }
    }
    Some(out)
}

/// One span, or `None` when the `Value` reader would note a problem about it.
fn span(raw: RawSpan<'_>, resource: &std::sync::Arc<Attributes>, at: &Location) -> Option<Span> {
    let trace_id = decode_id(&raw.trace_id?.0, 16).ok()??;
    let span_id = decode_id(&raw.span_id?.0, 8).ok()??;
    let parent_span_id = match raw.parent_span_id {
        None => None,
        Some(p) => decode_id(&p.0, 8).ok()?,
    };
    let time = |t: Option<IntLike>| -> Option<Option<u64>> {
        match t {
            None => Some(None),
            Some(IntLike::Int(i)) => match u64::try_from(i).ok()? {
                0 => Some(None),
                t => Some(Some(t)),
            },
            Some(IntLike::NotInt) => None,
        }
    };
    let start_unix_nano = time(raw.start)?;
    let end_unix_nano = time(raw.end)?;
    let attrs = raw.attributes.map(|a| a.0).unwrap_or_default();
    let mut events = Vec::with_capacity(raw.events.as_ref().map_or(0, Vec::len));
    for e in raw.events.into_iter().flatten() {
        events.push(SpanEvent {
            name: e.name.map(|n| n.0.into_owned()).unwrap_or_default(),
            time_unix_nano: match e.time {
                Some(IntLike::Int(i)) => u64::try_from(i).ok(),
                _ => None,
            },
            attributes: e.attributes.map(|a| a.0).unwrap_or_default(),
        });
    }
    let status = raw.status.map(|s| SpanStatus {
        code: code_of(s.code),
        message: s.message.map(|m| m.0.into_owned()).unwrap_or_default(),
    });
    Some(Span {
        trace_id,
        span_id,
        parent_span_id,
        name: raw.name.map(|n| n.0.into_owned()).unwrap_or_default(),
        kind: raw.kind.flatten().and_then(kind_name).map(str::to_string),
        start_unix_nano,
        end_unix_nano,
        attributes: attrs,
        events,
        status,
        resource: std::sync::Arc::clone(resource),
        at: at.clone(),
    })
}

/// A list of `KeyValue`s read straight into the attribute map, later keys replacing earlier
/// ones (as the `Value` reader inserts them).
struct AttributeList(Attributes);

impl<'de> Deserialize<'de> for AttributeList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AttributeList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of KeyValue")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AttributeList, A::Error> {
                let mut pairs: Vec<(Cow<'de, str>, Value)> =
                    Vec::with_capacity(seq.size_hint().unwrap_or(8));
                while let Some(kv) = seq.next_element::<KeyValue>()? {
                    pairs.push((kv.key.0, kv.value));
                }
                // Sorted at once (a stable sort, and the last of equal keys kept: what
                // inserting them in order gives), each key copied from the line into the
                // attributes' one buffer.
                Ok(AttributeList(Attributes::from_pairs(pairs)))
            }
        }
        d.deserialize_seq(V)
    }
}

/// Any error: read the line with the `Value` reader.
fn fallback<E: de::Error>() -> E {
    E::custom("read by the Value reader")
}

/// Stores `value` in `slot`, failing when the key was already given (in either spelling).
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(fallback());
    }
    *slot = Some(value);
    Ok(())
}

/// A string of the line, borrowed when it has no escapes.
struct Str<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, visited as `serde_json::Value` would read it (so with the same checks) and
/// dropped.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Skip;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_none<E: de::Error>(self) -> Result<Skip, E> {
                Ok(Skip)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
                Skip::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
                while seq.next_element::<Skip>()?.is_some() {}
                Ok(Skip)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
                while map.next_key::<Str>()?.is_some() {
                    map.next_value::<Skip>()?;
                }
                Ok(Skip)
            }
        }
        d.deserialize_any(V)
    }
}

/// A 64-bit integer as OTLP JSON writes one: a number or a decimal string (what `int_of`
/// reads); `NotInt` for a fraction or a string that is not an integer.
enum IntLike {
    Int(i128),
    NotInt,
}

impl<'de> Deserialize<'de> for IntLike {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IntLike;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntLike, E> {
                Ok(IntLike::Int(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntLike, E> {
                Ok(IntLike::Int(v.into()))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<IntLike, E> {
                Ok(IntLike::NotInt)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IntLike, E> {
                Ok(match v.trim().parse::<i128>() {
                    Ok(i) => IntLike::Int(i),
                    Err(_) => IntLike::NotInt,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// OTLP `SpanKind` or `StatusCode` as a number (`as_i64`: `None` beyond `i64` and for a
/// fraction) or its enum name (the names of `names`, numbered from 0; `None` for another).
struct EnumLike<const STATUS: bool>(Option<i64>);

impl<'de, const STATUS: bool> Deserialize<'de> for EnumLike<STATUS> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const STATUS: bool>;
        impl<'de, const STATUS: bool> Visitor<'de> for V<STATUS> {
            type Value = EnumLike<STATUS>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an enum number or name")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(EnumLike(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(EnumLike(i64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(EnumLike(None))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                let n = if STATUS {
                    match v {
                        "STATUS_CODE_OK" => Some(1),
                        "STATUS_CODE_ERROR" => Some(2),
                        _ => None,
                    }
                } else {
                    match v {
                        "SPAN_KIND_UNSPECIFIED" => Some(0),
                        "SPAN_KIND_INTERNAL" => Some(1),
                        "SPAN_KIND_SERVER" => Some(2),
                        "SPAN_KIND_CLIENT" => Some(3),
                        "SPAN_KIND_PRODUCER" => Some(4),
                        "SPAN_KIND_CONSUMER" => Some(5),
                        _ => None,
                    }
                };
                Ok(EnumLike(n))
            }
        }
        d.deserialize_any(V::<STATUS>)
    }
}

/// `TracesData` / `ExportTraceServiceRequest`.
struct TracesData<'de> {
    resource_spans: Vec<ResourceSpans<'de>>,
}

impl<'de> Deserialize<'de> for TracesData<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TracesData<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("TracesData")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut rs = None;
                while let Some(k) = map.next_key::<Str>()? {
                    match &*k.0 {
                        "resourceSpans" | "resource_spans" => once(&mut rs, map.next_value()?)?,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(TracesData {
                    resource_spans: rs.ok_or_else(fallback)?,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `ResourceSpans`: the resource's attributes and the three spellings of the scope lists (all
/// read, in the `Value` reader's order).
struct ResourceSpans<'de> {
    resource_attributes: Option<AttributeList>,
    scope_spans: Option<Vec<ScopeSpans<'de>>>,
    scope_spans_snake: Option<Vec<ScopeSpans<'de>>>,
    library_spans: Option<Vec<ScopeSpans<'de>>>,
}

impl<'de> Deserialize<'de> for ResourceSpans<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ResourceSpans<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("ResourceSpans")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut resource: Option<Option<Resource>> = None;
                let mut scope_spans: Option<Option<Vec<ScopeSpans>>> = None;
                let mut scope_spans_snake: Option<Option<Vec<ScopeSpans>>> = None;
                let mut library_spans: Option<Option<Vec<ScopeSpans>>> = None;
                while let Some(k) = map.next_key::<Str>()? {
                    match &*k.0 {
                        "resource" => once(&mut resource, map.next_value()?)?,
                        "scopeSpans" => once(&mut scope_spans, map.next_value()?)?,
                        "scope_spans" => once(&mut scope_spans_snake, map.next_value()?)?,
                        "instrumentationLibrarySpans" => {
                            once(&mut library_spans, map.next_value()?)?
                        }
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(ResourceSpans {
                    resource_attributes: resource.flatten().and_then(|r| r.attributes),
                    scope_spans: scope_spans.flatten(),
                    scope_spans_snake: scope_spans_snake.flatten(),
                    library_spans: library_spans.flatten(),
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `Resource`: its attributes (a list; `null` is a problem, left to the `Value` reader).
struct Resource {
    attributes: Option<AttributeList>,
}

impl<'de> Deserialize<'de> for Resource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Resource;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("Resource")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut attributes = None;
                while let Some(k) = map.next_key::<Str>()? {
                    match &*k.0 {
                        "attributes" => once(&mut attributes, map.next_value()?)?,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(Resource { attributes })
            }
        }
        d.deserialize_map(V)
    }
}

/// `ScopeSpans`: its spans (the scope itself is not read).
struct ScopeSpans<'de> {
    spans: Option<Vec<RawSpan<'de>>>,
}

impl<'de> Deserialize<'de> for ScopeSpans<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ScopeSpans<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("ScopeSpans")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut spans: Option<Option<Vec<RawSpan>>> = None;
                while let Some(k) = map.next_key::<Str>()? {
                    match &*k.0 {
                        "spans" => once(&mut spans, map.next_value()?)?,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(ScopeSpans {
                    spans: spans.flatten(),
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `Span`, its fields as written (ids and times checked afterwards, in [`span`]).
struct RawSpan<'de> {
    name: Option<Str<'de>>,
    trace_id: Option<Str<'de>>,
    span_id: Option<Str<'de>>,
    parent_span_id: Option<Str<'de>>,
    start: Option<IntLike>,
    end: Option<IntLike>,
    kind: Option<Option<i64>>,
    attributes: Option<AttributeList>,
    events: Option<Vec<RawEvent<'de>>>,
    status: Option<RawStatus<'de>>,
}

impl<'de> Deserialize<'de> for RawSpan<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawSpan<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("Span")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                // Each slot: `Some(value)` once the key was seen (a `null` value is
                // `Some(None)`, which the `Value` reader treats as absent).
                let mut name: Option<Option<Str>> = None;
                let mut trace_id: Option<Option<Str>> = None;
                let mut span_id: Option<Option<Str>> = None;
                let mut parent: Option<Option<Str>> = None;
                let mut start: Option<Option<IntLike>> = None;
                let mut end: Option<Option<IntLike>> = None;
                let mut kind: Option<Option<EnumLike<false>>> = None;
                let mut attributes: Option<AttributeList> = None;
                let mut events: Option<Option<Vec<RawEvent>>> = None;
                let mut status: Option<Option<RawStatus>> = None;
                while let Some(k) = map.next_key::<Str>()? {
                    match &*k.0 {
                        "name" => once(&mut name, map.next_value()?)?,
                        "traceId" | "trace_id" => once(&mut trace_id, map.next_value()?)?,
                        "spanId" | "span_id" => once(&mut span_id, map.next_value()?)?,
                        "parentSpanId" | "parent_span_id" => once(&mut parent, map.next_value()?)?,
                        "startTimeUnixNano" | "start_time_unix_nano" => {
                            once(&mut start, map.next_value()?)?
                        }
                        "endTimeUnixNano" | "end_time_unix_nano" => {
                            once(&mut end, map.next_value()?)?
                        }
                        "kind" => once(&mut kind, map.next_value()?)?,
                        "attributes" => once(&mut attributes, map.next_value()?)?,
                        "events" => once(&mut events, map.next_value()?)?,
                        "status" => once(&mut status, map.next_value()?)?,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(RawSpan {
                    name: name.flatten(),
                    trace_id: trace_id.flatten(),
                    span_id: span_id.flatten(),
                    parent_span_id: parent.flatten(),
                    start: start.flatten(),
                    end: end.flatten(),
                    kind: kind.map(|k| k.and_then(|k| k.0)),
                    attributes,
                    events: events.flatten(),
                    status: status.flatten(),
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `Span.Event`.
struct RawEvent<'de> {
    name: Option<Str<'de>>,
    time: Option<IntLike>,
    attributes: Option<AttributeList>,
}

impl<'de> Deserialize<'de> for RawEvent<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawEvent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("Event")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut name: Option<Option<Str>> = None;
                let mut time: Option<Option<IntLike>> = None;
                let mut attributes: Option<AttributeList> = None;
                while let Some(k) = map.next_key::<Str>()? {
                    match &*k.0 {
                        "name" => once(&mut name, map.next_value()?)?,
                        "timeUnixNano" | "time_unix_nano" => once(&mut time, map.next_value()?)?,
                        "attributes" => once(&mut attributes, map.next_value()?)?,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(RawEvent {
                    name: name.flatten(),
                    time: time.flatten(),
                    attributes,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `Status`.
struct RawStatus<'de> {
    code: i64,
    message: Option<Str<'de>>,
}

impl<'de> Deserialize<'de> for RawStatus<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawStatus<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("Status")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut code: Option<Option<EnumLike<true>>> = None;
                let mut message: Option<Option<Str>> = None;
                while let Some(k) = map.next_key::<Str>()? {
                    match &*k.0 {
                        "code" => once(&mut code, map.next_value()?)?,
                        "message" => once(&mut message, map.next_value()?)?,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(RawStatus {
                    // A number beyond `i64`, a fraction, `null` or another name: unset (0).
                    code: code.flatten().and_then(|c| c.0).unwrap_or(0),
                    message: message.flatten(),
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// A `KeyValue` (a missing value is `null`; an invalid one fails the line).
struct KeyValue<'de> {
    key: Str<'de>,
    value: Value,
}

impl<'de> Deserialize<'de> for KeyValue<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyValue<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("KeyValue")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut key: Option<Str> = None;
                let mut value: Option<AnyValue> = None;
                while let Some(k) = map.next_key::<Str>()? {
                    match &*k.0 {
                        "key" => once(&mut key, map.next_value()?)?,
                        "value" => once(&mut value, map.next_value()?)?,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(KeyValue {
                    key: key.ok_or_else(fallback)?,
                    value: value.map_or(Value::Null, |v| v.0),
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// An OTLP JSON `AnyValue` as a plain JSON value (as `json_any_value` reads it); an object
/// with more than one key, or a value of the wrong type, fails.
struct AnyValue(Value);

impl<'de> Deserialize<'de> for AnyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("AnyValue")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                // A field written as `null` is not set (proto3's JSON mapping; Phoenix's
                // `spans/otlpv1` writes every field, the unset ones as `null`); more than one
                // set field goes to the `Value` reader.
                let mut value: Option<Value> = None;
                while let Some(k) = map.next_key::<Str>()? {
                    let set = match &*k.0 {
                        "stringValue" | "string_value" | "bytesValue" | "bytes_value" => {
                            map.next_value::<Option<String>>()?.map(Value::String)
                        }
                        "boolValue" | "bool_value" => {
                            map.next_value::<Option<bool>>()?.map(Value::Bool)
                        }
                        "intValue" | "int_value" => match map.next_value::<Option<IntLike>>()? {
                            None => None,
                            Some(IntLike::Int(i)) => {
                                Some(Value::from(i64::try_from(i).map_err(|_| fallback())?))
                            }
                            Some(IntLike::NotInt) => return Err(fallback()),
                        },
                        "doubleValue" | "double_value" => {
                            map.next_value::<Option<Double>>()?.map(|d| d.0)
                        }
                        "arrayValue" | "array_value" => map
                            .next_value::<Option<Values<AnyValue>>>()?
                            .map(|list| Value::Array(list.0.into_iter().map(|v| v.0).collect())),
                        "kvlistValue" | "kvlist_value" => {
                            map.next_value::<Option<Values<KvEntry>>>()?.map(|list| {
                                let mut m = Map::new();
                                for e in list.0 {
                                    m.insert(e.0, e.1);
                                }
                                Value::Object(m)
                            })
                        }
                        _ => return Err(fallback()),
                    };
                    if let Some(v) = set {
                        if value.is_some() {
                            return Err(fallback());
                        }
                        value = Some(v);
                    }
                }
                Ok(AnyValue(value.unwrap_or(Value::Null)))
            }
        }
        d.deserialize_map(V)
    }
}

/// `doubleValue`: a number kept as written (an integer stays one), or a decimal string
/// (`NaN` and infinities kept as the string, as the `Value` reader does).
struct Double(Value);

impl<'de> Deserialize<'de> for Double {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Double;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Double, E> {
                Ok(Double(Value::Number(v.into())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Double, E> {
                Ok(Double(Value::Number(v.into())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Double, E> {
                Ok(Double(
                    Number::from_f64(v).map_or(Value::Null, Value::Number),
                ))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Double, E> {
                match s.parse::<f64>() {
                    Ok(x) if x.is_finite() => Ok(Double(
                        Number::from_f64(x).map_or(Value::Null, Value::Number),
                    )),
                    Ok(_) => Ok(Double(Value::String(s.to_string()))),
                    Err(_) => Err(fallback()),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// `{"values": [...]}` of `arrayValue` and `kvlistValue` (`null` or missing: empty).
struct Values<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Values<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Values<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("{\"values\": [...]}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut values: Option<Option<Vec<T>>> = None;
                while let Some(k) = map.next_key::<Str>()? {
                    match &*k.0 {
                        "values" => once(&mut values, map.next_value()?)?,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(Values(values.flatten().unwrap_or_default()))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// One `kvlistValue` entry: a string key and an `AnyValue` (missing: `null`).
struct KvEntry(String, Value);

impl<'de> Deserialize<'de> for KvEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let kv = KeyValue::deserialize(d)?;
        Ok(KvEntry(kv.key.0.into_owned(), kv.value))
    }
}
