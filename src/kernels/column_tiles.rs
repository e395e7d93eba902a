//! Windowed ops (convolutions, pools and their gradients) of one image whose single row, with the
//! rows its windows read, passes a storage binding: a Conv1D over a long signal is one image row.
//! Bands of rows cannot help there, so the image is cut into tiles of columns. A tile's columns
//! are not contiguous in NHWC (each row holds a slice of them), so every tensor's columns of a
//! tile are copied into a temporary, one copy per row, the op runs on those narrow images (in
//! bands of rows where they still pass a binding), and the result's columns are copied back.

use crate::error::Result;

use super::{KernelContext, TensorRef};

/// Where a tensor of a windowed op lies: on its image side (x, dx: the image's columns) or on its
/// windows side (y, dy: the output's columns).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Side {
    Image,
    Windows,
}

/// One tile of columns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ColumnTile {
    /// Image columns the tile's op sees (first, count).
    pub image: (i64, i64),
    /// Window (output) columns (first, count).
    pub windows: (i64, i64),
    /// The image columns whose result the tile completes, (first, count) within `image`: all of
    /// them, but for a gradient that gathers over whole windows, which sees more than it writes.
    pub written: (i64, i64),
    /// The tile's left padding, so that its windows stay where they were in the image.
    pub pad_left: i64,
}

impl ColumnTile {
    /// Whether the tile has work: some window reads some image column.
    pub fn is_empty(&self) -> bool {
        self.image.1 <= 0 || self.windows.1 <= 0
    }
}

/// Tiles of at most `per_tile` output columns (a forward op, a filter gradient): each over the
/// image columns its windows read, `reach` columns from `column * stride - left`, clamped to the
/// image's `w` (none where they all lie in the padding).
pub fn by_windows(ow: i64, per_tile: i64, (stride, left, reach): (i64, i64, i64), w: i64) -> Vec<ColumnTile> {
    let mut tiles = Vec::new();
    let mut first = 0;
    while first < ow {
        let end = (first + per_tile.max(1)).min(ow);
        let lo = (first * stride - left).max(0);
        let hi = ((end - 1) * stride - left + reach - 1).min(w - 1);
        let count = (hi - lo + 1).max(0);
        let pad_left = (left + lo - first * stride).max(0);
        tiles.push(ColumnTile { image: (lo, count), windows: (first, end - first), written: (0, count), pad_left });
        first = end;
    }
    tiles
}

/// Tiles of at most `per_tile` image columns of a gradient that gathers each image column's terms
/// from the windows covering it. `whole_windows` false (a convolution's input gradient): the tile
/// sees just its own columns and the windows reaching into them, the first kept at or before the
/// window starting at the tile's first column, so that its padding stays non-negative.
/// `whole_windows` true (a pool gradient, whose windows need all their elements: an argmax, a
/// count inside the image): the tile sees every column of the windows reaching into it and writes
/// its own columns among them.
pub fn by_image(
    w: i64,
    per_tile: i64,
    (stride, left, reach): (i64, i64, i64),
    ow: i64,
    whole_windows: bool,
) -> Vec<ColumnTile> {
    let mut tiles = Vec::new();
    let mut x0 = 0;
    while x0 < w {
        let x1 = (x0 + per_tile.max(1)).min(w);
        // The first window whose last column reaches x0, and the last one starting by x1 - 1.
        let reaching =
            (x0 + left - reach + 1).div_euclid(stride) + i64::from((x0 + left - reach + 1).rem_euclid(stride) != 0);
        let last = (x1 - 1 + left).div_euclid(stride).min(ow - 1);
        let tile = if whole_windows {
            let o0 = reaching.max(0);
            let s = (o0 * stride - left).max(0);
            let e = (last * stride - left + reach).min(w);
            let (from, to) = (x0.max(s), x1.min(e));
            ColumnTile {
                image: (s, (e - s).max(0)),
                windows: (o0, (last - o0 + 1).max(0)),
                written: (from - s, (to - from).max(0)),
                pad_left: (left + s - o0 * stride).max(0),
            }
        } else {
            let o0 = reaching.min((x0 + left).div_euclid(stride)).max(0);
            ColumnTile {
                image: (x0, x1 - x0),
                windows: (o0, (last - o0 + 1).max(0)),
                written: (0, x1 - x0),
                pad_left: (left + x0 - o0 * stride).max(0),
            }
        };
        tiles.push(tile);
        x0 = x1;
    }
    tiles
}

/// The tiles `tiles_of(per_tile)` makes for the widest `per_tile`, halving from `w`, whose tiles
/// all `fit`; None where tiles of one column do not.
pub fn widest_fitting(
    w: i64,
    tiles_of: impl Fn(i64) -> Vec<ColumnTile>,
    fits: impl Fn(&ColumnTile) -> bool,
) -> Option<Vec<ColumnTile>> {
    let mut per_tile = w.max(1);
    loop {
        let tiles = tiles_of(per_tile);
        if tiles.iter().all(&fits) {
            return Some(tiles);
        }
        if per_tile == 1 {
            return None;
        }
        per_tile = (per_tile / 2).max(1);
    }
}

/// `t` ([.., w, c]) as the image of `count` columns that a temporary at its address holds.
pub fn narrowed(t: &TensorRef, count: i64) -> TensorRef {
    let mut shape = t.shape.clone();
    let r = shape.len();
    shape[r - 2] = count;
    TensorRef { shape, ..t.clone() }
}

/// Columns `src_first..src_first + count` of every row of `src` ([.., w, c]: the dimensions before
/// the last two count as rows) into columns `dst_first..` of `dst` (as many rows): one copy per
/// row, as a row's columns are contiguous.
pub fn copy_columns(
    ctx: &mut dyn KernelContext,
    (src, src_first): (&TensorRef, i64),
    (dst, dst_first): (&TensorRef, i64),
    count: i64,
) -> Result<()> {
    let r = src.shape.len();
    let rows: i64 = src.shape[..r - 2].iter().product();
    let pixel = src.shape[r - 1] as u64 * src.dtype.size();
    let (src_w, dst_w) = (src.shape[r - 2], dst.shape[dst.shape.len() - 2]);
    let stream = ctx.stream()?;
    for row in 0..rows {
        let from = src.address + (row * src_w + src_first) as u64 * pixel;
        let to = dst.address + (row * dst_w + dst_first) as u64 * pixel;
        stream.memcpy_dtod(to, from, count as u64 * pixel)?;
    }
    Ok(())
}

/// Runs a windowed op tile by tile: each of `inputs` has its tile's columns (`Side` says which)
/// copied into a temporary of its own, `run` computes the tile's result from those (`out`'s
/// tile, a temporary, where there is an `out`; `run` accumulates results itself where there is
/// none), and the tile's columns of the result are copied into `out`. A tile without work writes
/// zeros.
pub fn run(
    ctx: &mut dyn KernelContext,
    tiles: &[ColumnTile],
    inputs: &[(&TensorRef, Side)],
    out: Option<(&TensorRef, Side)>,
    mut run_tile: impl FnMut(&mut dyn KernelContext, &ColumnTile, &[TensorRef], Option<&TensorRef>) -> Result<()>,
) -> Result<()> {
    let columns = |tile: &ColumnTile, side: Side| if side == Side::Image { tile.image } else { tile.windows };
    let widest = |side: Side| tiles.iter().map(|t| columns(t, side).1).max().unwrap_or(0).max(1);
    let temp = |ctx: &mut dyn KernelContext, t: &TensorRef, side: Side| {
        ctx.allocate_temp(t.dtype, &narrowed(t, widest(side)).shape)
    };
    let mut input_temps = Vec::with_capacity(inputs.len());
    for &(t, side) in inputs {
        input_temps.push(temp(ctx, t, side)?);
    }
    let out_temp = match out {
        Some((t, side)) => Some(temp(ctx, t, side)?),
        None => None,
    };
    for tile in tiles {
        let out_tile = match (out, &out_temp) {
            (Some((_, side)), Some(temp)) => Some(narrowed(temp, columns(tile, side).1)),
            _ => None,
        };
        if tile.is_empty() {
            if let Some(target) = &out_tile {
                ctx.stream()?.fill(target.address, target.byte_len(), 0)?;
            }
        } else {
            let mut views = Vec::with_capacity(inputs.len());
            for (&(t, side), temp) in inputs.iter().zip(&input_temps) {
                let (first, count) = columns(tile, side);
                let view = narrowed(temp, count);
                copy_columns(ctx, (t, first), (&view, 0), count)?;
                views.push(view);
            }
            run_tile(ctx, tile, &views, out_tile.as_ref())?;
        }
        if let (Some((t, side)), Some(target)) = (out, &out_tile) {
            match side {
                Side::Image => {
                    copy_columns(ctx, (target, tile.written.0), (t, tile.image.0 + tile.written.0), tile.written.1)?
                }
                Side::Windows => copy_columns(ctx, (target, 0), (t, tile.windows.0), tile.windows.1)?,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_tiles_cover_the_output_and_read_what_their_windows_read() {
        // 10 columns, windows of 3 at stride 2 with one column of padding on the left: 5 outputs.
        let tiles = by_windows(5, 2, (2, 1, 3), 10);
        assert_eq!(tiles.len(), 3);
        assert_eq!(tiles[0], ColumnTile { image: (0, 4), windows: (0, 2), written: (0, 4), pad_left: 1 });
        // Windows 2, 3 start at columns 3, 5 and end at 7.
        assert_eq!(tiles[1], ColumnTile { image: (3, 5), windows: (2, 2), written: (0, 5), pad_left: 0 });
        // Window 4 starts at 7; its last column, 9, is the image's.
        assert_eq!(tiles[2], ColumnTile { image: (7, 3), windows: (4, 1), written: (0, 3), pad_left: 0 });
    }

    #[test]
    fn image_tiles_take_the_windows_reaching_them() {
        // Windows of 3 at stride 2, one column of left padding, 5 windows over 10 columns.
        let tiles = by_image(10, 4, (2, 1, 3), 5, false);
        // Columns 0..4: windows 0 (-1..1), 1 (1..3), 2 (3..5).
        assert_eq!(tiles[0], ColumnTile { image: (0, 4), windows: (0, 3), written: (0, 4), pad_left: 1 });
        // Columns 4..8: windows 2 (3..5) .. 4 (7..9); window 2 starts one column before the tile.
        assert_eq!(tiles[1], ColumnTile { image: (4, 4), windows: (2, 3), written: (0, 4), pad_left: 1 });
        let whole = by_image(10, 4, (2, 1, 3), 5, true);
        // The same windows, with every column they cover: 3..10, writing 4..8.
        assert_eq!(whole[1], ColumnTile { image: (3, 7), windows: (2, 3), written: (1, 4), pad_left: 0 });
        // Columns no window covers (stride 4 > window 2): an empty tile, which the caller zeroes.
        let gaps = by_image(10, 2, (4, 0, 2), 3, true);
        assert!(gaps[1].is_empty() && gaps[1].written.1 == 0);
        assert_eq!(gaps[2], ColumnTile { image: (4, 2), windows: (1, 1), written: (0, 2), pad_left: 0 });
    }
}
