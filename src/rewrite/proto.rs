//! Just enough of the protobuf wire format to edit a serialized `GraphDef`: a message is a list of
//! (field number, value) pairs kept in order, so fields this module does not know survive a
//! parse/encode round trip byte for byte.

use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Varint(u64),
    Fixed64([u8; 8]),
    Bytes(Vec<u8>),
    Fixed32([u8; 4]),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub fields: Vec<(u32, Value)>,
}

fn malformed(what: &str) -> Error {
    Error::invalid_argument(format!("tensorflow-wgpu: malformed protobuf ({what})"))
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Result<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at).ok_or_else(|| malformed("truncated varint"))?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(malformed("varint longer than 10 bytes"))
}

fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn take<'a>(bytes: &'a [u8], at: &mut usize, len: usize) -> Result<&'a [u8]> {
    let end = at.checked_add(len).filter(|&e| e <= bytes.len()).ok_or_else(|| malformed("field past the end"))?;
    let slice = &bytes[*at..end];
    *at = end;
    Ok(slice)
}

impl Message {
    pub fn parse(bytes: &[u8]) -> Result<Message> {
        let mut fields = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let key = read_varint(bytes, &mut at)?;
            let number = u32::try_from(key >> 3).map_err(|_| malformed("field number"))?;
            let value = match key & 7 {
                0 => Value::Varint(read_varint(bytes, &mut at)?),
                1 => Value::Fixed64(take(bytes, &mut at, 8)?.try_into().map_err(|_| malformed("fixed64"))?),
                2 => {
                    let len = usize::try_from(read_varint(bytes, &mut at)?).map_err(|_| malformed("length"))?;
                    Value::Bytes(take(bytes, &mut at, len)?.to_vec())
                }
                5 => Value::Fixed32(take(bytes, &mut at, 4)?.try_into().map_err(|_| malformed("fixed32"))?),
                other => return Err(malformed(&format!("wire type {other}"))),
            };
            fields.push((number, value));
        }
        Ok(Message { fields })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (number, value) in &self.fields {
            let wire = match value {
                Value::Varint(_) => 0,
                Value::Fixed64(_) => 1,
                Value::Bytes(_) => 2,
                Value::Fixed32(_) => 5,
            };
            write_varint(&mut out, (u64::from(*number) << 3) | wire);
            match value {
                Value::Varint(v) => write_varint(&mut out, *v),
                Value::Fixed64(b) => out.extend_from_slice(b),
                Value::Fixed32(b) => out.extend_from_slice(b),
                Value::Bytes(b) => {
                    write_varint(&mut out, b.len() as u64);
                    out.extend_from_slice(b);
                }
            }
        }
        out
    }

    /// Every length-delimited value of field `number`, in order.
    pub fn bytes(&self, number: u32) -> impl Iterator<Item = &[u8]> {
        self.fields.iter().filter_map(move |(n, v)| match v {
            Value::Bytes(b) if *n == number => Some(b.as_slice()),
            _ => None,
        })
    }

    /// The last string of field `number` (protobuf's rule for a repeated singular field), or "".
    pub fn string(&self, number: u32) -> String {
        self.bytes(number).last().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default()
    }

    /// The last varint of field `number`.
    pub fn varint(&self, number: u32) -> Option<u64> {
        self.fields.iter().rev().find_map(|(n, v)| match v {
            Value::Varint(x) if *n == number => Some(*x),
            _ => None,
        })
    }

    pub fn with_bytes(mut self, number: u32, value: impl Into<Vec<u8>>) -> Self {
        self.fields.push((number, Value::Bytes(value.into())));
        self
    }

    pub fn with_varint(mut self, number: u32, value: u64) -> Self {
        self.fields.push((number, Value::Varint(value)));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_wire_type() {
        let message = Message::default()
            .with_varint(1, 300)
            .with_bytes(2, b"abc".to_vec())
            .with_varint(3, u64::MAX)
            .with_bytes(1000, Vec::new());
        let mut message = message;
        message.fields.push((4, Value::Fixed32([1, 2, 3, 4])));
        message.fields.push((5, Value::Fixed64([9; 8])));
        let bytes = message.encode();
        assert_eq!(Message::parse(&bytes).unwrap(), message);
        // Field 1 varint 300 is the protobuf documentation's example: 08 ac 02.
        assert_eq!(&bytes[..3], &[0x08, 0xac, 0x02]);
    }

    #[test]
    fn truncated_input_is_an_error() {
        let bytes = Message::default().with_bytes(1, b"hello".to_vec()).encode();
        assert!(Message::parse(&bytes[..bytes.len() - 1]).is_err());
        assert!(Message::parse(&[0x80]).is_err());
        assert!(Message::parse(&[0x0b]).is_err()); // wire type 3 (groups) is not used by GraphDef
    }
}
