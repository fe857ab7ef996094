/**
 * A protobuf writer into one growing buffer, for OTLP span batches (`spans.ts`). A
 * length-delimited field is written with a one-byte length placeholder and moved when its
 * length needs more bytes (`end`), so nothing is encoded twice. Field numbers and wire types
 * are opentelemetry-proto v1's; see `spans.ts`.
 */

export const VARINT = 0;
export const FIXED64 = 1;
export const LEN = 2;
export const FIXED32 = 5;

export class ProtobufWriter {
  buf: Buffer;
  pos = 0;
  /** The KeyValue an attribute is being written into (attributes do not nest). */
  #kv = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  ensure(extra: number): void {
    if (this.pos + extra <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + extra));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** A non-negative integer below 2^53. */
  varint(n: number): void {
    this.ensure(10);
    const buf = this.buf;
    while (n >= 0x80) {
      buf[this.pos++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    buf[this.pos++] = n;
  }

  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  /** A string field (UTF-8). */
  string(field: number, s: string): void {
    this.tag(field, LEN);
    const n = s.length;
    if (n < 128) {
      // ASCII (most attribute keys and values) is copied byte by byte: a `Buffer.write`
      // call costs more than the copy for strings this short. Anything else falls back to it.
      this.ensure(1 + n);
      const buf = this.buf;
      const start = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[start + i] = c;
      }
      if (i === n) {
        buf[this.pos] = n;
        this.pos = start + n;
        return;
      }
    }
    const bytes = Buffer.byteLength(s, 'utf8');
    this.varint(bytes);
    this.ensure(bytes);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** A bytes field, or an embedded message encoded before (`take()` of another writer). */
  bytes(field: number, value: Buffer): void {
    this.tag(field, LEN);
    this.varint(value.length);
    this.ensure(value.length);
    this.pos += value.copy(this.buf, this.pos);
  }

  /** Bytes encoded before (fields of the message being written), copied as they are. */
  raw(encoded: Buffer): void {
    this.ensure(encoded.length);
    this.pos += encoded.copy(this.buf, this.pos);
  }

  /** A bytes field of 4-byte big-endian words (trace and span ids as the SDK's hex reads). */
  words(field: number, w0: number, w1: number, w2?: number, w3?: number): void {
    const n = w2 === undefined ? 8 : 16;
    this.tag(field, LEN);
    this.ensure(1 + n);
    const buf = this.buf;
    buf[this.pos++] = n;
    buf.writeUInt32BE(w0 >>> 0, this.pos);
    buf.writeUInt32BE(w1 >>> 0, this.pos + 4);
    if (w2 !== undefined) {
      buf.writeUInt32BE(w2 >>> 0, this.pos + 8);
      buf.writeUInt32BE((w3 ?? 0) >>> 0, this.pos + 12);
    }
    this.pos += n;
  }

  /** Unix time in ms (fractional, µs precision) as fixed64 nanoseconds, exactly. */
  fixed64TimeMs(field: number, ms: number): void {
    this.tag(field, FIXED64);
    this.ensure(8);
    const sec = Math.floor(ms / 1000);
    const nanos = Math.round((ms - sec * 1000) * 1e6);
    // seconds · 10^9 + nanos as two 32-bit halves (the value exceeds 2^53): seconds = hi·2^16 + lo.
    const x = Math.floor(sec / 0x10000) * 1e9; // < 2^47
    const y = (sec % 0x10000) * 1e9 + nanos; // < 2^47
    const low = (x % 0x10000) * 0x10000 + (y % 0x100000000);
    const lo32 = low % 0x100000000;
    const hi32 = Math.floor(x / 0x10000) + Math.floor(y / 0x100000000) + Math.floor(low / 0x100000000);
    this.buf.writeUInt32LE(lo32, this.pos);
    this.buf.writeUInt32LE(hi32 >>> 0, this.pos + 4);
    this.pos += 8;
  }

  fixed32(field: number, n: number): void {
    this.tag(field, FIXED32);
    this.ensure(4);
    this.buf.writeUInt32LE(n >>> 0, this.pos);
    this.pos += 4;
  }

  /** Starts a length-delimited field; returns the position of its length byte. */
  begin(field: number): number {
    this.tag(field, LEN);
    this.ensure(1);
    return this.pos++;
  }

  /** Ends the field `begin` started: writes its length, moving the content when it needs > 1 byte. */
  end(mark: number): void {
    const length = this.pos - mark - 1;
    if (length < 0x80) {
      this.buf[mark] = length;
      return;
    }
    let extra = 0;
    for (let n = length; n >= 0x80; n = Math.floor(n / 0x80)) extra++;
    this.ensure(extra);
    this.buf.copyWithin(mark + 1 + extra, mark + 1, this.pos);
    this.pos += extra;
    let at = mark;
    let n = length;
    while (n >= 0x80) {
      this.buf[at++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buf[at] = n;
  }

  // ---- common/v1: KeyValue { key 1, value 2: AnyValue { string 1, bool 2, int 3, double 4 } }

  /** A string attribute as KeyValue field `field` (9 in Span, 1 in Resource). */
  stringAttr(field: number, key: string, value: string): void {
    const any = this.#openAttr(field, key);
    this.string(1, value);
    this.#closeAttr(any);
  }

  /** An integer attribute (`int_value`); a negative or unsafe number goes as `double_value`. */
  intAttr(field: number, key: string, value: number): void {
    const any = this.#openAttr(field, key);
    if (Number.isSafeInteger(value) && value >= 0) {
      this.tag(3, VARINT);
      this.varint(value);
    } else this.#double(value);
    this.#closeAttr(any);
  }

  doubleAttr(field: number, key: string, value: number): void {
    const any = this.#openAttr(field, key);
    this.#double(value);
    this.#closeAttr(any);
  }

  boolAttr(field: number, key: string, value: boolean): void {
    const any = this.#openAttr(field, key);
    this.tag(2, VARINT);
    this.varint(value ? 1 : 0);
    this.#closeAttr(any);
  }

  /** Starts KeyValue `field` with `key` and its AnyValue; returns the AnyValue's mark. */
  #openAttr(field: number, key: string): number {
    this.#kv = this.begin(field);
    this.string(1, key);
    return this.begin(2);
  }

  #closeAttr(any: number): void {
    this.end(any);
    this.end(this.#kv);
  }

  /** AnyValue `double_value`. */
  #double(value: number): void {
    this.tag(4, FIXED64);
    this.ensure(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  /** The bytes written so far (a copy) and a reset. */
  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.pos));
    this.pos = 0;
    return out;
  }
}
