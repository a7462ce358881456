/** Boxes whose children are boxes, on the path to the time-stamped headers. */
const containers = new Set(["moov", "trak", "mdia"]);

/** Full boxes that carry creation and modification times. */
const stamped = new Set(["mvhd", "tkhd", "mdhd"]);

function boxType(bytes: Uint8Array, offset: number): string {
  return String.fromCharCode(bytes[offset + 4], bytes[offset + 5], bytes[offset + 6], bytes[offset + 7]);
}

function clearTimes(view: DataView, offset: number, headerSize: number): void {
  const body = offset + headerSize;
  const version = view.getUint8(body);
  const timeBytes = version === 1 ? 16 : 8;
  for (let i = 0; i < timeBytes; i++) view.setUint8(body + 4 + i, 0);
}

function walk(bytes: Uint8Array, view: DataView, start: number, end: number): void {
  let offset = start;
  while (offset + 8 <= end) {
    let size = view.getUint32(offset);
    let headerSize = 8;
    if (size === 1) {
      size = Number(view.getBigUint64(offset + 8));
      headerSize = 16;
    } else if (size === 0) {
      size = end - offset;
    }
    if (size < headerSize || offset + size > end) return;
    const type = boxType(bytes, offset);
    if (containers.has(type)) walk(bytes, view, offset + headerSize, offset + size);
    else if (stamped.has(type)) clearTimes(view, offset, headerSize);
    offset += size;
  }
}

/**
 * Sets the creation and modification times of an MP4 (movie, track and
 * media headers) to zero, in place. The encoder stamps the wall clock there,
 * and those eight bytes are all that keeps two renders of the same seed from
 * being byte-identical.
 */
export function normalizeMp4Timestamps(bytes: Uint8Array): void {
  walk(bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0, bytes.byteLength);
}
