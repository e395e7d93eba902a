mod common;
use common::*;

#[test]
fn round_trip() {
    let p = plugin();
    let m = p.alloc(4097);
    let s = p.stream();
    let data = bytes(4097, 1);
    p.htod(s, &m.base, &data);
    let mut out = vec![0u8; 4097];
    p.dtoh(s, &m.base, &mut out);
    p.sync(s);
    assert_eq!(out, data);
    p.destroy_stream(s);
}
