#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Where the modeled cost of a traced start goes, on an image seekless relocated (see bench/README.md,
"Layout of a real application", "Where the time goes").

  trace-split.py MOUNT PROFILE_JSON TRACE MAJOR MINOR DEVICE_BYTES [PREFIX]

MOUNT: the relocated image, mounted (read-only is enough); PROFILE_JSON: `seeklessctl --json=short show` of
the profile that was optimized (its files' paths start with PREFIX, which is replaced by MOUNT; default: the
paths as they are); TRACE: tracefs text of block:block_rq_issue of the start on that image.

It finds the blocks that hold the profile's hot ranges now ("moved data"; their physical runs are the
"pieces"), classifies every read request of the trace as moved data or other (metadata, directories, files
or parts of files not in the profile), and prints the model's cost (daemon/plan/layout.c, re-implemented
here: settle 1 ms + 15 ms * sqrt(distance / device) + 4.17 ms per seek, a gap of at most 64 KiB read over,
150 MB/s) split by kind of step, then the same request sequence re-costed with the moved data laid out as
one contiguous run (the pieces in physical order with the gaps between them removed, placed at the lowest
piece), and with the moved data in the order this trace first touched it. With ORDER_TSV=FILE in the
environment (the run's items in their order: PATH<TAB>OFFSET<TAB>LENGTH<TAB>STATE<TAB>SIZE, LENGTH 0 for a
whole file, e.g. from the database's run_files joined with files), also as one run in the donor's own order:
what a donor in one piece would have given.

  sqlite3 -separator "$(printf '\t')" STATE/seekless.db "select f.path, r.range_offset, r.range_length, r.state,
      r.size from run_files r join files f on f.id = r.file_id where r.run_id = (select max(id) from runs)
      order by r.position"
"""
import bisect
import fcntl
import json
import math
import os
import struct
import sys

SETTLE, STROKE, ROT, BPS, SHORT = 1.0, 15.0, 4.17, 150e6, 64 * 1024
FIEMAP = 0xC020660B
FLAG_LAST, FLAG_UNKNOWN, FLAG_INLINE = 0x1, 0x2, 0x200


def seek_ms(d, dev):
    r = 0 if d == 0 else (1 if d >= dev else d / dev)
    return SETTLE + STROKE * math.sqrt(r) + ROT


def step_cost(prev_end, off, length, dev):
    """(seek ms, transfer ms, kind) of reading [off, off+length) after a request that ended at prev_end"""
    t = length * 1000 / BPS
    if prev_end is None:
        return seek_ms(0, dev), t, "first"
    if off == prev_end:
        return 0.0, t, "contiguous"
    if off > prev_end and off - prev_end <= SHORT:
        return (off - prev_end) * 1000 / BPS, t, "short gap"
    return seek_ms(abs(off - prev_end), dev), t, "seek"


def fiemap(path):
    out, start = [], 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            n = 256
            buf = bytearray(struct.pack("=QQIIII", start, (1 << 64) - 1 - start, 0, 0, n, 0) + bytes(56 * n))
            fcntl.ioctl(fd, FIEMAP, buf)
            mapped = struct.unpack_from("=I", buf, 20)[0]
            if mapped == 0:
                break
            last = False
            for i in range(mapped):
                lo, ph, ln, _, _, fl = struct.unpack_from("=QQQQQI", buf, 32 + 56 * i)
                if not fl & (FLAG_UNKNOWN | FLAG_INLINE):
                    out.append((lo, ph, ln))
                start = lo + ln
                last = last or fl & FLAG_LAST
            if last:
                break
    finally:
        os.close(fd)
    return out


def main():
    mnt, prof, trace, maj, mnr, dev = sys.argv[1:7]
    prefix = sys.argv[7] if len(sys.argv) > 7 else None
    maj, mnr, dev = int(maj), int(mnr), int(dev)
    files = json.load(open(prof))["files"]
    moved = []          # (physical, length, file index, logical)
    for fi, f in enumerate(files):
        p = f["path"]
        if prefix and p.startswith(prefix):
            p = mnt + p[len(prefix):]
        try:
            ext = fiemap(p)
        except OSError as e:
            print(f"# {p}: {e}", file=sys.stderr)
            continue
        rngs = [(r["offset"], r["length"]) for r in f["ranges"]] if "ranges" in f else [(0, f["size"])]
        for ro, rl in rngs:
            re_ = ro + rl
            for lo, ph, ln in ext:
                a, b = max(lo, ro), min(lo + ln, re_)
                if a < b:
                    moved.append((ph + a - lo, b - a, fi, a))
    moved.sort()
    # pieces: physical runs of moved data (extents that touch are joined)
    pieces = []
    for ph, ln, _, _ in moved:
        if pieces and pieces[-1][0] + pieces[-1][1] == ph:
            pieces[-1][1] += ln
        else:
            pieces.append([ph, ln])
    starts = [p[0] for p in pieces]
    tot = sum(p[1] for p in pieces)
    # where they are
    lo_, hi_ = pieces[0][0], pieces[-1][0] + pieces[-1][1]
    sizes = sorted((p[1] for p in pieces), reverse=True)
    print(f"moved data: {tot / 2**20:.1f} MiB in {len(pieces)} physical pieces, from {lo_ / 2**30:.2f} GiB to "
          f"{hi_ / 2**30:.2f} GiB (span {(hi_ - lo_) / 2**20:.0f} MiB); largest pieces MiB: "
          + " ".join(f"{s / 2**20:.1f}" for s in sizes[:8])
          + f"; median {sizes[len(sizes) // 2] / 2**10:.0f} KiB; pieces >= 4 MiB: {sum(1 for s in sizes if s >= 4 << 20)}"
          f" holding {sum(s for s in sizes if s >= 4 << 20) / 2**20:.0f} MiB")
    gaps = [pieces[i + 1][0] - pieces[i][0] - pieces[i][1] for i in range(len(pieces) - 1)]
    if gaps:
        print(f"gaps between consecutive pieces (physical order): {sum(gaps) / 2**20:.0f} MiB in all, "
              f"median {sorted(gaps)[len(gaps) // 2] / 2**10:.0f} KiB, <= 64 KiB: {sum(1 for g in gaps if g <= SHORT)}")
    # squeezed address of every piece
    sq, acc = [], lo_
    for ph, ln in pieces:
        sq.append(acc)
        acc += ln

    def piece_of(off):
        i = bisect.bisect_right(starts, off) - 1
        if i >= 0 and off < pieces[i][0] + pieces[i][1]:
            return i
        return None

    reqs = []
    for line in open(trace):
        k = line.find("block_rq_issue: ")
        if k < 0:
            continue
        f = line[k + 16:].split()
        try:
            mm = f[0].split(",")
            if int(mm[0]) != maj or int(mm[1]) != mnr or "R" not in f[1]:
                continue
            j = f.index("+")
            s, n = int(f[j - 1]), int(f[j + 1])
        except (ValueError, IndexError):
            continue
        if n > 0:
            reqs.append((s * 512, n * 512))
    kinds = []
    for off, ln in reqs:
        i = piece_of(off)
        kinds.append(("M", i) if i is not None else ("O", None))
    nm = sum(1 for k in kinds if k[0] == "M")
    bm = sum(ln for (off, ln), k in zip(reqs, kinds) if k[0] == "M")
    print(f"trace: {len(reqs)} read requests, {sum(l for _, l in reqs) / 2**20:.1f} MiB; on moved data {nm} "
          f"({bm / 2**20:.1f} MiB, mean {bm / max(nm, 1) / 1024:.0f} KiB), other {len(reqs) - nm} "
          f"({(sum(l for _, l in reqs) - bm) / 2**20:.1f} MiB)")

    def squeeze_end(x, base):
        """where the byte before x ends in the squeezed layout base[] (x inside or right after a piece, or in
        the gap after one: the end of that piece)"""
        i = bisect.bisect_right(starts, x - 1) - 1
        if i < 0:
            return x
        return base[i] + min(x - pieces[i][0], pieces[i][1])

    def cost(addr_of, label, keep=lambda k: True, base=None):
        prev = None
        pk = None
        split = {}
        total = 0.0
        nseek = {}
        for (off, ln), k in zip(reqs, kinds):
            if not keep(k):
                continue
            a = addr_of(off, k)
            s, t, how = step_cost(prev, a, ln, dev)
            end = a + ln
            if base is not None and k[0] == "M":
                # a request that reads on over a gap into the next piece ends there, in the squeezed layout
                end = max(a, squeeze_end(off + ln, base)) if squeeze_end(off + ln, base) >= a else a + ln
            if how in ("seek", "short gap"):
                if pk is None:
                    cls = "first"
                elif pk[0] == "M" and k[0] == "M":
                    cls = "moved->moved, same piece" if pk[1] == k[1] else "moved->moved, another piece"
                else:
                    cls = f"{'moved' if pk[0] == 'M' else 'other'}->{'moved' if k[0] == 'M' else 'other'}"
                cls += " (short gap)" if how == "short gap" else ""
                split[cls] = split.get(cls, 0.0) + s
                nseek[cls] = nseek.get(cls, 0) + 1
            else:
                split["first" if how == "first" else "contiguous"] = split.get("first" if how == "first" else "contiguous", 0.0) + s
            split["transfer"] = split.get("transfer", 0.0) + t
            total += s + t
            prev = end
            pk = k
        print(f"{label}: modeled {total:.1f} ms")
        for c in sorted(split, key=lambda c: -split[c]):
            if split[c] > 0:
                print(f"    {c:40s} {split[c]:8.1f} ms" + (f"  ({nseek[c]} steps)" if c in nseek else ""))
        return total

    cost(lambda off, k: off, "as traced")
    cost(lambda off, k: off - pieces[k[1]][0] + sq[k[1]] if k[0] == "M" else off,
         "moved data as one run (pieces in physical order, gaps removed, at the lowest piece)", base=sq)
    # pieces in the order this trace first touches them
    order, seen = [], set()
    for k in kinds:
        if k[0] == "M" and k[1] not in seen:
            seen.add(k[1])
            order.append(k[1])
    order += [i for i in range(len(pieces)) if i not in seen]
    tq, acc = {}, lo_
    for i in order:
        tq[i] = acc
        acc += pieces[i][1]
    cost(lambda off, k: off - pieces[k[1]][0] + tq[k[1]] if k[0] == "M" else off,
         "moved data as one run, pieces in first-touch order of this trace", base=tq)
    cost(lambda off, k: off - pieces[k[1]][0] + sq[k[1]],
         "one run, the other requests left out (the moved data's own cost)", keep=lambda k: k[0] == "M", base=sq)
    cost(lambda off, k: off, "the other requests alone, as traced", keep=lambda k: k[0] == "O")
    if os.environ.get("ORDER_TSV"):
        da = donor_order(os.environ["ORDER_TSV"], files, moved)
        miss = sum(1 for (off, ln), k in zip(reqs, kinds) if k[0] == "M" and da(off) is None)
        print(f"donor order: {miss} requests on moved data not found in the run's items")
        base_lo = lo_

        def addr(off, k):
            if k[0] != "M":
                return off
            a = da(off)
            return off if a is None else base_lo + a
        # the end of a request in the donor's order: its last byte's place + 1
        prev = None
        tot = 0.0
        sk = {"seek": [0, 0.0], "short gap": [0, 0.0]}
        back = fwd = 0
        for (off, ln), k in zip(reqs, kinds):
            a = addr(off, k)
            s_, t, how = step_cost(prev, a, ln, dev)
            if how in sk:
                sk[how][0] += 1
                sk[how][1] += s_
                if prev is not None and k[0] == "M":
                    back += a < prev
                    fwd += a > prev
            tot += s_ + t
            e = da(off + ln - 1) if k[0] == "M" else None
            prev = (base_lo + e + 1) if e is not None and base_lo + e >= a else a + ln
        print(f"moved data as one run in the donor's own order (the run's items back to back, at {base_lo / 2**30:.2f} GiB): "
              f"modeled {tot:.1f} ms; seeks {sk['seek'][0]} ({sk['seek'][1]:.1f} ms), short gaps {sk['short gap'][0]}; "
              f"jumps onto moved data: {back} backward, {fwd} forward")
        prev = None
        tot = 0.0
        n = 0
        for (off, ln), k in zip(reqs, kinds):
            if k[0] != "M":
                continue
            a = addr(off, k)
            s_, t, how = step_cost(prev, a, ln, dev)
            n += how == "seek"
            tot += s_ + t
            e = da(off + ln - 1)
            prev = (base_lo + e + 1) if e is not None and base_lo + e >= a else a + ln
        print(f"  the same, the other requests left out: modeled {tot:.1f} ms, {n} seeks")


def donor_order(order_tsv, files, moved):
    """the moved data as one run in the donor's own (logical) order: the run's items back to back in their
    positions (ORDER_TSV: PATH<TAB>OFFSET<TAB>LENGTH[<TAB>...], LENGTH 0 = the whole file)"""
    slots = {}          # path -> sorted [(offset, length, base)]
    acc = 0
    for line in open(order_tsv):
        f = line.rstrip("\n").split("\t")
        path, off, ln = f[0], int(f[1]), int(f[2])
        if ln == 0:
            ln = int(f[4]) if len(f) > 4 else 0
        slots.setdefault(path, []).append((off, ln, acc))
        acc += (ln + 4095) // 4096 * 4096
    for v in slots.values():
        v.sort()
    mstarts = [m[0] for m in moved]

    def logical_of(off):
        i = bisect.bisect_right(mstarts, off) - 1
        if i < 0 or off >= moved[i][0] + moved[i][1]:
            return None
        ph, ln, fi, lg = moved[i]
        return files[fi]["path"], lg + off - ph

    def donor_addr(off):
        x = logical_of(off)
        if x is None:
            return None
        v = slots.get(x[0], [])
        j = bisect.bisect_right([s[0] for s in v], x[1]) - 1
        if j < 0 or x[1] >= v[j][0] + v[j][1]:
            return None
        return v[j][2] + x[1] - v[j][0]
    return donor_addr


if __name__ == "__main__":
    main()
