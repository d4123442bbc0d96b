# SPDX-License-Identifier: MIT
# vmstack's gdb extension: fibers in gdb, as `info threads` / `thread N`
# show threads, in a live process and in a core file.
#
#   info vmstack-fibers [--group]   one line per live fiber: id, name, state,
#                                   thread, stack range, peak use, and its
#                                   first frame outside vmstack's own code,
#                                   with gdb's frame number; --group: one
#                                   backtrace per group of fibers whose
#                                   backtraces are identical
#   vmstack-fiber N [COMMAND]       fiber N's backtrace, unwound from the
#                                   context it saved when it switched away,
#                                   numbered as gdb numbers it (the fiber's
#                                   frames take the place of the thread's
#                                   callers, from frame 1); with COMMAND, run
#                                   it there, with the fiber's first frame
#                                   outside vmstack's own code selected; the
#                                   thread's own frames are back afterwards
#   vmstack-gcore FILE              gcore, plus the memory gcore leaves out
#                                   around guard pages: every fiber's stack;
#                                   pages of zeros are holes of a sparse file
# At a SIGSEGV in a fiber's guard, it says which fiber overflowed and what
# `continue` does.
#
# Everything is read through the library's debug information, by name: the
# region table vms__g.regions, each region's slot table, and the fiber
# descriptor (struct vms_fiber_desc) kept in each slot's task_ext; the
# scheduler of each thread (the thread-local `sched` of fiber.c) says which
# fiber runs.  Without debug information (a stripped or Release build), the
# same offsets come from the table the library exports for debuggers,
# vms_debug_table (src/task/debugtable.h), and the output is the same but for
# what only debug information gives (arguments, files and lines).  No
# descriptor is ever on a fiber's stack, so a fiber whose stack overflowed is
# listed like any other.
#
# gdb loads this file by itself for libvmstack.so.0 once it is installed as
# <gdb data dir>/auto-load/<library's real path>-gdb.py (the packages do
# so).  In a build tree: `add-auto-load-safe-path BUILD_DIR`.  For a program
# linked with libvmstack.a: `source PREFIX/share/vmstack/vmstack-gdb.py`.

import bisect
import ctypes
import errno
import functools
import os
import re
import struct

import gdb
import gdb.unwinder

# The saved context of a fiber that switched away (src/arch/*/switch.S), per
# architecture, for a library without vms_debug_table: its size, the stack
# pointer's and program counter's names, and where each register is saved
# from the saved stack pointer up.  x86-64: MXCSR and x87 control word at 0,
# r12-r15, rbx, rbp, the return address.  aarch64: d8-d15, x19-x28, x29,
# x30 (the return address), FPCR and padding.
SWITCH_FRAMES = {
    "i386:x86-64": (64, "rsp", "rip", {"r12": 8, "r13": 16, "r14": 24, "r15": 32, "rbx": 40, "rbp": 48, "rip": 56}),
    "aarch64": (176, "sp", "pc", dict([("d%d" % (8 + i), 8 * i) for i in range(8)] +
                                      [("x%d" % (19 + i), 64 + 8 * i) for i in range(11)] + [("pc", 152)])),
}


def _default_frame():
    """The saved-frame layout of the inferior's architecture, when the library has no table."""
    name = gdb.selected_inferior().architecture().name()
    if name not in SWITCH_FRAMES:
        raise VmsError("architecture %s: vmstack's extension knows x86-64 and aarch64" % name)
    return SWITCH_FRAMES[name]
# Frames of vmstack's own scheduler, skipped for a fiber's "current frame".
OWN_FRAME_PREFIXES = ("vms_", "vms__")
# How many lines of backtrace `vmstack-fiber` and `--group` print at most.
MAX_FRAMES = 64
# Fibers beyond which the listing leaves out peak use (it reads each stack).
PEAK_LIMIT = 10000
# The default guard below a stack, and the largest vmstack accepts (vms_config.guard_size).
DEFAULT_GUARD = 64 << 10
MAX_GUARD = 1 << 30


class VmsError(Exception):
    pass


def _field_offset(t, path):
    """Byte offset and type of a field of struct type t, by a dotted path."""
    off = 0
    for name in path.split("."):
        t = t.strip_typedefs()
        f = next((f for f in t.fields() if f.name == name), None)
        if f is None:
            raise VmsError("struct %s has no field %s" % (t.tag or t.name, name))
        off += f.bitpos // 8
        t = f.type
    return off, t


def _has_field(t, name):
    return any(f.name == name for f in t.strip_typedefs().fields())


def _enum_value(name, default):
    try:
        return int(gdb.parse_and_eval(name))
    except gdb.error:
        return default


def _address_of(name):
    try:
        return int(gdb.parse_and_eval("(unsigned long)&%s" % name))
    except gdb.error:
        return None


def _read(inf, addr, fmt):
    return struct.unpack_from(fmt, bytes(inf.read_memory(addr, struct.calcsize(fmt))))


def _cstr(raw):
    return raw.split(b"\0", 1)[0].decode()


# vms_debug_table, version 1 (src/task/debugtable.h): header, then the rest.
TABLE_HEAD = "<8sII"
TABLE_V1 = "<8sIIQQ8III8I18I5III8s8s8s4xQ"
TABLE_REG = "<8sII"
TABLE_MAX_REGS = 24
TABLE_FIELDS = ("region_slots", "region_nchunks", "region_chunk_slots", "region_max_slots")
TABLE_SLOT_FIELDS = (("state", "slot_state"), ("kind", "task_kind"), ("name", "task_name"), ("start", "task_start"))
TABLE_FIBER_FIELDS = ("sp", "base", "size", "id", "owner", "ended", "joiner", "wait", "wait_fd")


class Layout:
    """Offsets of what we read from a slot, looked up for each command (the
    program, and with it the library, may have changed): by name in the debug
    information, or from vms_debug_table without it.  fields maps a key to
    (offset in the slot, size, signed); regions(inf) and thread_sched(t) read
    the rest the same way."""

    def __init__(self, inf):
        self.frame = _default_frame()
        self.table = None
        addr = _address_of("vms_debug_table")
        if addr is not None:
            self._read_table(inf, addr)
        try:
            slot = gdb.lookup_type("struct vms_slot")
            desc = gdb.lookup_type("struct vms_fiber_desc")
        except gdb.error:
            if self.table is None:
                raise VmsError("no debug information for vmstack and no vms_debug_table in the program: build "
                               "it with -g, or install the library's debug symbols (libvmstack0-dbgsym)")
            self._from_table(inf)
        else:
            self._from_debug_info(slot, desc)
        self.codecs = {key: self._codec(key) for key in self.fields}

    def _read_table(self, inf, addr):
        magic, version, size = _read(inf, addr, TABLE_HEAD)
        if _cstr(magic) != "vmstack" or version != 1 or size < struct.calcsize(TABLE_V1):
            return
        v = _read(inf, addr, TABLE_V1)
        t = {"nregions": v[3], "regions": v[4]}
        i = 5
        for name in TABLE_FIELDS:
            t[name] = (v[i], v[i + 1])
            i += 2
        t["slot_size"], t["slot_ext"] = v[i], v[i + 1]
        i += 2
        for _, name in TABLE_SLOT_FIELDS:
            t[name] = (v[i], v[i + 1])
            i += 2
        for name in TABLE_FIBER_FIELDS:
            t["fiber_" + name] = (v[i], v[i + 1])
            i += 2
        (t["slot_live"], t["task_fiber"], t["wait_park"], t["wait_sleep"], t["wait_fd"], frame_size, nregs,
         sp, pc, tp, t["sched"]) = v[i:i + 11]
        regs = {}
        regs_at = addr + struct.calcsize(TABLE_V1)
        for r in range(min(nregs, TABLE_MAX_REGS)):
            name, off, _ = _read(inf, regs_at + r * struct.calcsize(TABLE_REG), TABLE_REG)
            regs[_cstr(name)] = off
        self.frame = (frame_size, _cstr(sp), _cstr(pc), regs)
        t["thread_pointer"] = _cstr(tp)
        self.table = t

    def _from_table(self, inf):
        t = self.table
        self.slot_size = t["slot_size"]
        self.fields = {}
        for key, name in TABLE_SLOT_FIELDS:
            self.fields[key] = t[name] + (key == "kind",)
        for name in TABLE_FIBER_FIELDS:
            off, size = t["fiber_" + name]
            self.fields[name] = (t["slot_ext"] + off, size, name == "wait_fd")
        self.ext = t["slot_ext"]
        self.slot_live = t["slot_live"]
        self.task_fiber = t["task_fiber"]
        self.wait_names = {t["wait_park"]: "parked", t["wait_sleep"]: "sleeping", t["wait_fd"]: "waiting on fd"}
        tpoff_at, cur, _, main, _, serial, _ = _read(inf, t["sched"], "<Q6I")
        self.sched = (tpoff_at, cur, main, serial)
        self.inf = inf

    def _from_debug_info(self, slot, desc):
        self.slot_size = slot.sizeof
        self.fields = {}
        for key, path in (("state", "state"), ("kind", "task.kind"), ("name", "task.name"),
                          ("start", "task.start")):
            self.fields[key] = self._typed(*_field_offset(slot, path))
        self.ext = _field_offset(slot, "task_ext")[0]
        names = ["sp", "base", "size", "id", "owner", "ended", "joiner"]
        # Fields of the waiting machinery, where the library has it.
        names += [n for n in ("wait", "wait_fd") if _has_field(desc, n)]
        for name in names:
            off, t = _field_offset(desc, name)
            self.fields[name] = self._typed(self.ext + off, t)
        # The guard below a stack of the library's own (0 on the program's).
        off, t = _field_offset(desc, "stack.guard_size")
        self.fields["guard"] = self._typed(self.ext + off, t)
        self.slot_live = _enum_value("VMS_SLOT_LIVE", 2)
        self.task_fiber = _enum_value("VMS_TASK_FIBER", 1)
        self.wait_names = {_enum_value("VMS_WAIT_PARK", 1): "parked",
                           _enum_value("VMS_WAIT_SLEEP", 2): "sleeping",
                           _enum_value("VMS_WAIT_FD", 3): "waiting on fd"}
        self.sched = None

    @staticmethod
    def _typed(off, t):
        t = t.strip_typedefs()
        return off, t.sizeof, t.code == gdb.TYPE_CODE_INT and t.is_signed

    def _codec(self, key):
        """How to read field key: (offset, struct.Struct), or (offset, size) for the name."""
        off, size, signed = self.fields[key]
        if key == "name":
            return off, size
        fmt = {1: "b", 2: "h", 4: "i", 8: "q"}[size]
        return off, struct.Struct("<" + (fmt if signed else fmt.upper()))

    def unpacker(self, key):
        """A function (buf, base) -> field key of the slot at base."""
        off, how = self.codecs[key]
        unpack = how.unpack_from
        return lambda buf, base: unpack(buf, base + off)[0]

    def get(self, buf, base, key):
        off, how = self.codecs[key]
        if key == "name":
            raw = bytes(buf[base + off:base + off + how])
            return raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        return how.unpack_from(buf, base + off)[0]

    def regions(self, inf):
        """(slot table address, slots in use) of every region."""
        out = []
        if self.sched is None:
            g = gdb.parse_and_eval("vms__g")
            for r in range(int(g["nregions"])):
                region = g["regions"][r].dereference()
                nslots = min(int(region["nchunks"]) * int(region["chunk_slots"]), int(region["max_slots"]))
                out.append((int(region["slots"]), nslots))
            return out
        t = self.table
        n = _read(inf, t["nregions"], "<I")[0]
        for r in range(n):
            region = _read(inf, t["regions"] + 8 * r, "<Q")[0]
            got = {}
            for name in TABLE_FIELDS:
                off, size = t[name]
                got[name] = _read(inf, region + off, "<" + {4: "I", 8: "Q"}[size])[0]
            out.append((got["region_slots"],
                        min(got["region_nchunks"] * got["region_chunk_slots"], got["region_max_slots"])))
        return out

    def thread_sched(self, frame):
        """(serial, current, address of main) of the scheduler of the thread
        whose newest frame is frame; None where it has none."""
        if self.sched is None:
            sym = _scheduler_symbol()
            if sym is None:
                return None
            s = sym.value(frame)
            return int(s["serial"]), int(s["current"]), int(s["main"].address)
        tpoff_at, cur, main, serial = self.sched
        tpoff = _read(self.inf, tpoff_at, "<q")[0]
        if not tpoff:
            return None
        at = (int(frame.read_register(self.table["thread_pointer"])) + tpoff) & 0xffffffffffffffff
        serial_v = _read(self.inf, at + serial, "<Q")[0]
        current = _read(self.inf, at + cur, "<Q")[0]
        return serial_v, current, at + main


class Fiber:
    __slots__ = ("id", "name", "addr", "base", "size", "guard", "sp", "start", "started", "owner", "joiner", "wait",
                 "wait_fd", "thread", "running", "state")


def _inferior():
    inf = gdb.selected_inferior()
    if inf.pid == 0 and not inf.threads():
        raise VmsError("no process: run the program, attach to it, or load a core file")
    return inf


def read_fibers(layout, inf):
    """Every live fiber in every region, from the slot tables."""
    fibers = []
    # The two fields every slot is tested on, read without the generic path.
    state = layout.unpacker("state")
    kind = layout.unpacker("kind")
    for table, nslots in layout.regions(inf):
        batch = 4096
        for first in range(0, nslots, batch):
            n = min(batch, nslots - first)
            buf = inf.read_memory(table + first * layout.slot_size, n * layout.slot_size)
            for i in range(n):
                b = i * layout.slot_size
                if state(buf, b) & 0xffffffff != layout.slot_live or kind(buf, b) != layout.task_fiber:
                    continue
                if not layout.get(buf, b, "id") or layout.get(buf, b, "ended"):
                    continue
                f = Fiber()
                f.id = layout.get(buf, b, "id")
                f.name = layout.get(buf, b, "name")
                f.addr = table + (first + i) * layout.slot_size + layout.ext
                f.base = layout.get(buf, b, "base")
                f.size = layout.get(buf, b, "size")
                f.sp = layout.get(buf, b, "sp")
                f.start = layout.get(buf, b, "start")
                f.owner = layout.get(buf, b, "owner")
                f.joiner = layout.get(buf, b, "joiner")
                # Without debug information: unknown (None).
                f.guard = layout.get(buf, b, "guard") if "guard" in layout.fields else None
                f.wait = layout.get(buf, b, "wait") if "wait" in layout.fields else 0
                f.wait_fd = layout.get(buf, b, "wait_fd") if "wait_fd" in layout.fields else -1
                f.thread = None
                f.running = False
                fibers.append(f)
    fibers.sort(key=lambda f: f.id)
    return fibers


def _scheduler_symbol():
    sym = gdb.lookup_static_symbol("sched")
    if sym is None or sym.type.strip_typedefs().tag != "vms_sched":
        return None
    return sym


def read_threads(layout, inf):
    """Each thread's scheduler: serial -> thread, and which fiber runs where."""
    by_serial, running = {}, {}
    keep = gdb.selected_thread()
    try:
        for t in inf.threads():
            t.switch()
            try:
                got = layout.thread_sched(gdb.newest_frame())
            except (gdb.error, gdb.MemoryError):
                continue
            if got is None:
                continue
            serial, current, main = got
            if serial:
                by_serial[serial] = t
            if current and current != main:
                running[current] = t
    finally:
        if keep is not None:
            keep.switch()
    return by_serial, running


def fiber_state(f, layout, joiners):
    """The state shown for a fiber: running, runnable, parked, sleeping,
    waiting on fd N, or joining fiber N.  The one place that knows which
    descriptor fields say so."""
    if f.running:
        return "running"
    what = layout.wait_names.get(f.wait)
    if what == "waiting on fd":
        return "waiting on fd %d" % f.wait_fd
    if what:
        return what
    if f.addr in joiners:
        return "joining fiber %d" % joiners[f.addr]
    return "runnable"


# The bits of a saved return address that are not address (0: none): on
# aarch64 built with pac-ret (VMS_BRANCH_PROTECTION), the pointer-
# authentication code above the virtual address.  gdb's own unwinder
# removes it; a frame this extension makes from a saved context must too.
_code_mask = 0


def _pac_code_mask():
    """The inferior's pointer-authentication bits of code addresses."""
    if gdb.selected_inferior().architecture().name() != "aarch64":
        return 0
    try:
        return int(gdb.selected_frame().read_register("pauth_cmask"))
    except (gdb.error, ValueError):
        # No pauth registers (a core file, a remote stub): Linux gives user
        # code at most 48 bits of address, the rest may hold the code.
        return 0xffff << 48


def code_address(v):
    """A return address as read from a stack, without its pointer-authentication code."""
    return v & ~_code_mask


def collect():
    global _frame, _code_mask, _own_code
    inf = _inferior()
    layout = Layout(inf)
    _frame = layout.frame
    _code_mask = _pac_code_mask()
    _own_code = OwnCode()
    fibers = read_fibers(layout, inf)
    by_serial, running = read_threads(layout, inf)
    joiners = {f.joiner: f.id for f in fibers if f.joiner}
    for f in fibers:
        t = running.get(f.addr)
        f.running = t is not None
        f.thread = t if t is not None else by_serial.get(f.owner)
        f.state = fiber_state(f, layout, joiners)
        # A fiber that never ran has no saved context yet.
        f.started = bool(f.sp) or f.running
    return inf, fibers


# ---- unwinding a fiber from its saved context ----

class _FrameId:
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class FiberUnwinder(gdb.unwinder.Unwinder):
    """While a fiber is shown: the thread's innermost frame unwinds to the
    fiber's saved context instead of its real caller, so that frame 1 and
    up are the fiber's frames.  Off (regs None) at all other times."""

    def __init__(self):
        super().__init__("vmstack-fiber")
        self.regs = None
        self.at = None  # (pc, sp) of the thread's innermost frame

    def __call__(self, pending):
        if self.regs is None:
            return None
        pc = pending.read_register(_frame[2])
        sp = pending.read_register(_frame[1])
        if (int(pc), int(sp)) != self.at:
            return None
        # A stack address below any fiber's: gdb then takes the fiber's
        # frames, wherever its stack is, as outer frames of this one.
        info = pending.create_unwind_info(_FrameId(gdb.Value(1).cast(sp.type), pc))
        for reg, value in self.regs.items():
            info.add_saved_register(reg, gdb.Value(value).cast(pending.read_register(reg).type))
        return info


_unwinder = FiberUnwinder()
gdb.unwinder.register_unwinder(None, _unwinder, replace=True)


# The saved frame's description (SWITCH_FRAMES' form) of the last command's library.
_frame = SWITCH_FRAMES["i386:x86-64"]


def saved_context(inf, f):
    size, sp, pc, offsets = _frame
    mem = bytes(inf.read_memory(f.sp, size))
    regs = {reg: struct.unpack_from("<Q", mem, off)[0] for reg, off in offsets.items()}
    for reg in (pc, "x30"):
        if reg in regs:
            regs[reg] = code_address(regs[reg])
    regs[sp] = f.sp + size  # after the return
    return regs


def return_address_offset():
    """Where the saved frame holds the return address, from the saved sp."""
    return _frame[3][_frame[2]]


class Kept:
    """`with Kept():` the selected thread and frame are back on leaving."""

    def __enter__(self):
        self.keep_thread = gdb.selected_thread()
        try:
            self.keep_level = gdb.selected_frame().level()
        except gdb.error:
            self.keep_level = None
        return self

    def __exit__(self, *exc):
        if self.keep_thread is not None:
            self.keep_thread.switch()
            if self.keep_level is not None:
                frame = gdb.newest_frame()
                while frame is not None and frame.level() < self.keep_level:
                    frame = frame.older()
                if frame is not None:
                    frame.select()
        return False


class FiberFrames(Kept):
    """`with FiberFrames(inf, f):` fiber f's frames are frame 1 and up of
    its thread (or the selected one); on leaving, the thread's own frames
    and the selected thread and frame are back."""

    def __init__(self, inf, f):
        self.inf, self.f = inf, f

    def __enter__(self):
        super().__enter__()
        if self.f.thread is not None:
            self.f.thread.switch()
        gdb.invalidate_cached_frames()
        inner = gdb.newest_frame()
        while inner.type() == gdb.INLINE_FRAME and inner.older() is not None:
            inner = inner.older()
        first = inner.level() + 1
        _unwinder.at = (int(inner.read_register(_frame[2])), int(inner.read_register(_frame[1])))
        _unwinder.regs = saved_context(self.inf, self.f)
        gdb.invalidate_cached_frames()
        return first

    def __exit__(self, *exc):
        _unwinder.regs = None
        _unwinder.at = None
        gdb.invalidate_cached_frames()
        return super().__exit__(*exc)


def frames_from(first):
    """Up to MAX_FRAMES frames, outward from frame level first."""
    frame = gdb.newest_frame()
    while frame is not None and frame.level() < first:
        frame = frame.older()
    out = []
    while frame is not None and len(out) < MAX_FRAMES:
        out.append(frame)
        try:
            frame = frame.older()
        except gdb.error:
            break
    return out


def frame_name(frame):
    """The frame's function name.  Without debug information gdb may take a
    C name for an encoded Ada one and show vms__switch as vms.switch: ours
    are given back as they are spelt."""
    name = frame.name()
    if name and name.startswith("vms.") and frame.function() is None:
        name = name.replace(".", "__")
    return name


def describe(frame, with_args=True):
    """One frame as `bt` shows it: function (args) at file:line; without
    the arguments: function at file:line."""
    fn = frame.function()
    name = frame_name(frame) or "??"
    args = []
    if fn is not None and with_args:
        try:
            block = frame.block()
            while block is not None and block.function is None:
                block = block.superblock
            for sym in (block or []):
                if sym.is_argument:
                    try:
                        args.append("%s=%s" % (sym.name, frame.read_var(sym)))
                    except (gdb.error, ValueError):
                        args.append("%s=<optimized out>" % sym.name)
        except RuntimeError:
            pass
    text = "%s (%s)" % (name, ", ".join(args)) if with_args else name
    sal = frame.find_sal()
    if sal.symtab is not None:
        text += " at %s:%d" % (sal.symtab.filename, sal.line)
    else:
        lib = gdb.solib_name(frame.pc())
        if lib:
            text += " from %s" % lib
    return text


def frame_key(frame):
    sal = frame.find_sal()
    return (frame_name(frame) or hex(frame.pc()), sal.symtab.filename if sal.symtab else None, sal.line)


def _elf_symbols(path):
    """Every defined symbol of the .symtab of the ELF file path, as (value,
    size, name, st_info); [] without one (a program stripped whole)."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return []
        shoff, = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", head, 0x3a)
        f.seek(shoff)
        table = f.read(shentsize * shnum)
        sections = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]
        symtab = next((sh for sh in sections if sh[1] == 2), None)  # SHT_SYMTAB
        if symtab is None:
            return []
        f.seek(symtab[4])
        syms = f.read(symtab[5])
        strtab = sections[symtab[6]]
        f.seek(strtab[4])
        names = f.read(strtab[5])
    return [(value, size, names[at:names.index(b"\0", at)].decode("utf-8", "replace"), info)
            for at, info, _, shndx, value, size in struct.iter_unpack("<IBBHQQ", syms) if shndx and value]


def _named_own(name):
    """A vms_ function (or a part of one: vms_x.cold, vms_x.constprop.0)."""
    return bool(name) and name.split(".", 1)[0].startswith(OWN_FRAME_PREFIXES)


class OwnCode:
    """Which code is vmstack's own, by where it lies rather than by its
    name alone (its static functions, a channel's wait_on, have no vms_
    prefix).  A program linked with libvmstack.so: all of that library.
    Linked with libvmstack.a: the linker keeps an archive's objects
    together in .text, so a function of the program's symbol table is the
    library's when it is named vms_, or when it is a local (static, or
    hidden) function whose nearest named neighbours on both sides, vms_
    functions or the program's global ones, are vms_ functions.  With debug
    information, also any function compiled from vmstack's src/."""

    def __init__(self):
        table = _address_of("vms_debug_table")
        self.lib = gdb.solib_name(table) if table is not None else None
        self.starts, self.funcs = [], []
        if self.lib is None and table is not None:
            self._from_symtab(table)
        self.src = None
        sym = gdb.lookup_global_symbol("vms_fiber_spawn")
        if sym is not None and sym.symtab is not None:
            self.src = os.path.dirname(os.path.dirname(sym.symtab.fullname())) + os.sep

    def _from_symtab(self, table):
        path = gdb.current_progspace().filename
        try:
            at, starts, funcs = _static_own_code(path, os.stat(path).st_mtime_ns) if path else (None, [], [])
        except (OSError, struct.error, ValueError):
            return
        if at is None:
            return
        bias = table - at
        self.starts = [start + bias for start in starts]
        self.funcs = [(end + bias, own) for end, own in funcs]

    def by_address(self, pc):
        """True or False where the address tells; None where it does not."""
        if self.lib is not None:
            return gdb.solib_name(pc) == self.lib
        i = bisect.bisect_right(self.starts, pc) - 1
        if i < 0 or pc >= self.funcs[i][0]:
            return None
        return self.funcs[i][1]

    def frame(self, frame):
        """Whether frame is vmstack's own: by address, name or source."""
        if self.by_address(frame.pc()) or _named_own(frame_name(frame)):
            return True
        sal = frame.find_sal()
        return bool(self.src) and sal.symtab is not None and sal.symtab.fullname().startswith(self.src)


@functools.lru_cache(maxsize=4)
def _static_own_code(path, mtime):
    """For OwnCode, from the .symtab of the program path (as of mtime): the
    address of vms_debug_table there, and by address each function's start,
    and its end and whether it is vmstack's."""
    syms = _elf_symbols(path)
    at = next((value for value, _, name, _ in syms if name == "vms_debug_table"), None)
    # Functions (STT_FUNC), by address, and whether each is local.
    funcs = sorted((value, size, name, info >> 4 == 0) for value, size, name, info in syms if info & 0xf == 2)
    # Named: vms_ (own) or global (the program's); a local one is own when
    # the nearest named function on each side is.
    marks = [True if _named_own(name) else (None if local else False) for _, _, name, local in funcs]
    before, last = [], None
    for m in marks:
        last = m if m is not None else last
        before.append(last)
    after, last = [None] * len(marks), None
    for i in range(len(marks) - 1, -1, -1):
        last = marks[i] if marks[i] is not None else last
        after[i] = last
    starts = [value for value, _, _, _ in funcs]
    ends = [(value + max(size, 1), marks[i] if marks[i] is not None else bool(before[i] and after[i]))
            for i, (value, size, _, _) in enumerate(funcs)]
    return at, starts, ends


# What is vmstack's own code, for the program of the last command.
_own_code = None


def _own(frames, i):
    """Whether frames[i] is vmstack's, or inlined into a frame of vmstack's."""
    while frames[i].type() == gdb.INLINE_FRAME and i + 1 < len(frames):
        if _own_code.frame(frames[i]):
            return True
        i += 1
    return _own_code.frame(frames[i])


def first_user(frames):
    """The index in frames of the first frame outside vmstack's own code:
    where the fiber is (0 when every frame is vmstack's)."""
    i = 0
    while i < len(frames) and _own(frames, i):
        i += 1
    return i if i < len(frames) else 0


def fiber_frames(inf, f, use):
    """use(frames) with fiber f's frames, innermost first; the selected
    thread and frame are back afterwards."""
    if f.running:
        with Kept():
            f.thread.switch()
            return use(running_frames(f))
    with FiberFrames(inf, f) as first:
        return use(frames_from(first))


def running_frames(f):
    """A running fiber's frames: its thread's, from the first on its stack
    (the ones of a signal handler on the alternate stack come before)."""
    frames = frames_from(0)
    # An overflowing frame's stack pointer is in the guard below the stack.
    low = f.base - (f.guard if f.guard is not None else DEFAULT_GUARD)
    for i, frame in enumerate(frames):
        try:
            sp = int(frame.read_register(_frame[1]))
        except gdb.error:
            continue
        if low <= sp <= f.base + f.size:
            return frames[i:]
    return frames


def peak_use(inf, f):
    """Bytes used at the deepest: from the top down to the deepest non-zero
    word (the library's own measure; the canary at the base is skipped)."""
    try:
        mem = bytes(inf.read_memory(f.base + 8, f.size - 8))
    except gdb.MemoryError:
        return None
    return f.size - 8 - (len(mem) - len(mem.lstrip(b"\0")))


def thread_label(t):
    if t is None:
        return "?"
    return "%d (%s)" % (t.num, t.name or "LWP %d" % t.ptid[1])


def list_fibers(inf, fibers):
    peak = len(fibers) <= PEAK_LIMIT
    cache = {}
    print("  Id     Name                             State            Thread          Stack                                  Peak    Frame")
    for f in fibers:
        bt = backtrace_of(inf, f, cache)
        used = peak_use(inf, f) if peak else None
        print("%s %-6d %-32s %-16s %-15s 0x%x-0x%x %7s  %s" % (
            "*" if f.running and f.thread == gdb.selected_thread() else " ", f.id, f.name, f.state,
            thread_label(f.thread), f.base, f.base + f.size,
            "%d" % used if used is not None else "-", bt.where))
    print("%d fibers%s" % (len(fibers), "" if peak else " (peak use is read for up to %d)" % PEAK_LIMIT))


# ---- grouping identical backtraces ----

class Backtrace:
    """A backtrace unwound once, with where each return address lies
    relative to the stack's top, to recognise the same chain in another
    fiber by reading those words alone."""

    def __init__(self, frames, top):
        self.lines = [describe(fr) for fr in frames]
        # gdb's own numbers, which `vmstack-fiber N frame L` selects: the
        # same for every fiber of one thread with this backtrace.
        self.levels = [fr.level() for fr in frames]
        at = first_user(frames)
        # Shared by every fiber with this backtrace: their arguments may differ.
        self.where = "#%d %s" % (self.levels[at], describe(frames[at], with_args=False)) if frames else "??"
        self.key = tuple(frame_key(fr) for fr in frames)
        self.checks = []
        for fr in frames[1:]:
            if fr.type() == gdb.INLINE_FRAME:
                continue
            try:
                self.checks.append((top - (int(fr.read_register(_frame[1])) - 8), fr.pc()))
            except gdb.error:
                pass

    def matches(self, stack, top):
        """Whether the used stack (bytes from the saved sp up to top) holds
        the same return addresses at the same offsets from the top."""
        for off, pc in self.checks:
            at = len(stack) - off
            if at < 0 or code_address(struct.unpack_from("<Q", stack, at)[0]) != pc:
                return False
        return True


class NotStarted:
    """A fiber spawned and not run yet: no frames, only its start routine."""

    def __init__(self, start):
        block = gdb.block_for_pc(start) if start else None
        name = block.function.name if block is not None and block.function is not None else hex(start)
        self.where = "%s, not started" % name
        self.lines = ["%s: not started yet" % name]
        self.levels = [0]
        self.key = ("not started", start)


def backtrace_of(inf, f, cache):
    if f.running:
        return fiber_frames(inf, f, lambda fr: Backtrace(fr, f.base + f.size))
    if not f.started:
        key = ("not started", f.start)
        if key not in cache:
            cache[key] = NotStarted(f.start)
        return cache[key]
    top = f.base + f.size
    # One read per fiber: the part of its stack in use, saved context included.
    stack = bytes(inf.read_memory(f.sp, top - f.sp))
    # Per thread: the fiber's frames are numbered from its thread's own.
    key = (f.thread.num if f.thread is not None else None,
           code_address(struct.unpack_from("<Q", stack, return_address_offset())[0]), len(stack))
    for bt in cache.get(key, ()):
        if bt.matches(stack, top):
            return bt
    bt = fiber_frames(inf, f, lambda fr: Backtrace(fr, top))
    cache.setdefault(key, []).append(bt)
    return bt


def group_fibers(inf, fibers):
    cache, groups = {}, {}
    for f in fibers:
        bt = backtrace_of(inf, f, cache)
        groups.setdefault(bt.key, (bt, []))[1].append(f)
    for bt, members in sorted(groups.values(), key=lambda g: -len(g[1])):
        states = sorted({m.state for m in members})
        ids = ", ".join(str(m.id) for m in members[:10]) + (", ..." if len(members) > 10 else "")
        print("%d fiber%s (%s): %s" % (len(members), "" if len(members) == 1 else "s", ", ".join(states), ids))
        for level, line in zip(bt.levels, bt.lines):
            print("  #%-2d %s" % (level, line))
    print("%d fibers in %d groups" % (len(fibers), len(groups)))


# ---- commands ----

class InfoFibers(gdb.Command):
    """List vmstack's live fibers: id, name, state, thread, stack, peak use, frame.
Usage: info vmstack-fibers [--group]
--group prints each distinct backtrace once, with the fibers that have it."""

    def __init__(self):
        super().__init__("info vmstack-fibers", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        if any(a != "--group" for a in args):
            raise gdb.GdbError("usage: info vmstack-fibers [--group]")
        try:
            inf, fibers = collect()
            if "--group" in args:
                group_fibers(inf, fibers)
            else:
                list_fibers(inf, fibers)
        except VmsError as e:
            raise gdb.GdbError("vmstack: %s" % e)


class FiberCommand(gdb.Command):
    """Show a vmstack fiber's backtrace, or run a command in its frames.
Usage: vmstack-fiber ID [COMMAND]
Without COMMAND, prints the backtrace of fiber ID (as `info vmstack-fibers`
lists it), unwound from the context it saved when it last switched away,
with gdb's own frame numbers: the fiber's frames take the place of the
thread's callers, from frame 1.  With COMMAND (e.g. `info locals`, `frame 3`,
`bt full`), runs it there, with the fiber's first frame outside vmstack's own
code selected first.  The thread's own frames are back afterwards."""

    def __init__(self):
        super().__init__("vmstack-fiber", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        parts = arg.split(None, 1)
        if not parts or not parts[0].isdigit():
            raise gdb.GdbError("usage: vmstack-fiber ID [COMMAND]  (ids: info vmstack-fibers)")
        want = int(parts[0])
        try:
            inf, fibers = collect()
        except VmsError as e:
            raise gdb.GdbError("vmstack: %s" % e)
        f = next((f for f in fibers if f.id == want), None)
        if f is None:
            raise gdb.GdbError("vmstack: no live fiber %d (ids: info vmstack-fibers)" % want)
        print("fiber %d '%s', %s, thread %s, stack 0x%x-0x%x" % (
            f.id, f.name, f.state, thread_label(f.thread), f.base, f.base + f.size))
        if not f.started:
            print(NotStarted(f.start).lines[0])
            return

        def show(frames):
            at = frames[first_user(frames)]
            if len(parts) == 2:
                at.select()
                gdb.execute(parts[1], from_tty)
                return
            for fr in frames:
                print("#%-2d %s" % (fr.level(), describe(fr)))
            if len(frames) == MAX_FRAMES:
                print("(more frames not shown: vmstack-fiber %d bt)" % f.id)
            print("(vmstack-fiber %d COMMAND runs COMMAND in frame #%d, %s)" % (f.id, at.level(), frame_name(at) or "??"))

        fiber_frames(inf, f, show)


# ---- a guard hit under gdb ----

def guard_hit(fibers, addr):
    """(fiber, lowest address of its guard or None) when addr lies in the
    guard below a fiber's stack; None otherwise.  Slots are [guard][stack]:
    the guard of the lowest stack above addr.  Its size comes from the debug
    information; without it, the gap down to the stack below, if a fiber
    has it, bounds the guard, else the default guard size does."""
    above = [f for f in fibers if f.base > addr]
    if not above:
        return None
    f = min(above, key=lambda f: f.base)
    below = [g.base + g.size for g in fibers if g.base <= addr]
    low = max(below) if below else f.base - DEFAULT_GUARD
    if f.guard is not None:
        low = max(low, f.base - f.guard)
    if low > addr or f.base - addr > MAX_GUARD:
        return None
    return f, (low if f.guard is not None else None)


def segv_caught(inf):
    """Whether the live process still catches SIGSEGV (None: unknown): vmstack's
    handler gives the default action back once it has reported an abort."""
    try:
        with open("/proc/%d/status" % inf.pid) as status:
            mask = next(line.split()[1] for line in status if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return None
    return bool(int(mask, 16) & (1 << 10))  # SIGSEGV is 11


def on_stop(event):
    """At a SIGSEGV in a fiber's guard: which fiber, its stack and guard, and
    what `continue` does; before vmstack's own handler has run."""
    if not isinstance(event, gdb.SignalEvent) or event.stop_signal != "SIGSEGV":
        return
    try:
        addr = int(gdb.parse_and_eval("$_siginfo._sifields._sigfault.si_addr"))
        inf, fibers = collect()
    except Exception:  # a program without vmstack, or half set up: the stop is gdb's alone
        return
    hit = guard_hit(fibers, addr)
    if hit is None:
        return
    f, low = hit
    guard = "its guard pages 0x%x-0x%x" % (low, f.base) if low is not None else "the guard pages below it"
    print("vmstack: fiber %d '%s' on thread %s overflowed its stack 0x%x-0x%x: the access at 0x%x, %d bytes "
          "below it, hit %s" % (f.id, f.name, thread_label(f.thread), f.base, f.base + f.size, addr, f.base - addr,
                                guard))
    if segv_caught(inf) is False:
        print("vmstack: vmstack's handler has reported it already and gave SIGSEGV its default action: `continue` "
              "ends the process (with a core dump); `vmstack-gcore FILE` takes a core now")
    else:
        print("vmstack: `continue` passes the SIGSEGV to vmstack, which reports the overflow and kills the fiber (or "
              "aborts, as vms_set_overflow_policy says); `vmstack-fiber %d` shows its frames now" % f.id)


gdb.events.stop.connect(on_stop)


# ---- core files that keep every fiber's stack ----

PAGE = 4096
BLOCK = 1 << 20
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 1, 2
_ZEROS = bytes(BLOCK)
_libc = None
_READ_FAILED = re.compile(r"Memory read failed for corefile section, \d+ bytes at (0x[0-9a-f]+)")


def load_segments(path):
    """The PT_LOAD segments of an ELF64 core: vaddr -> (file offset, file size)."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            raise VmsError("%s is not a 64-bit little-endian ELF core" % path)
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    segments = {}
    for i in range(phnum):
        p_type, _, offset, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
        if p_type == 1 and filesz:
            segments[vaddr] = (offset, filesz)
    return segments


def copy_readable(inf, out, vaddr, offset, size):
    """Copies [vaddr, vaddr + size) into the file out at offset: in blocks,
    and page by page in a block that cannot be read whole (it holds guard
    pages, which are left as they are: zeros).  Zeros are not written, so
    that untouched stacks stay holes of a sparse file.  Returns the pages
    left out."""
    missing = 0

    def put(at, data):
        if data != _ZEROS[:len(data)]:
            out.seek(offset + at)
            out.write(data)

    for at in range(0, size, BLOCK):
        n = min(BLOCK, size - at)
        try:
            put(at, bytes(inf.read_memory(vaddr + at, n)))
            continue
        except gdb.MemoryError:
            pass
        for page in range(at, at + n, PAGE):
            try:
                put(page, bytes(inf.read_memory(vaddr + page, min(PAGE, at + n - page))))
            except gdb.MemoryError:
                missing += 1
    return missing


def _punch(fd, offset, size):
    """Deallocates [offset, offset + size) of the file fd, which then reads as zeros."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    if _libc.fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, size):
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def dig_holes(path):
    """Punches holes over the all-zero pages of the file path, as
    `fallocate --dig-holes` does: gcore writes every page it can read, also
    the ones the process never touched (most of every stack), where the
    kernel's own core leaves holes.  Returns the bytes it punched."""
    punched = 0
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        at = 0
        while at < size:
            try:
                at = os.lseek(fd, at, os.SEEK_DATA) // PAGE * PAGE
            except OSError as e:
                if e.errno == errno.ENXIO:  # holes only, up to the end
                    break
                raise
            data = os.pread(fd, BLOCK, at)
            if len(data) < PAGE:
                break
            if data == _ZEROS[:len(data)]:
                runs = [(0, len(data) // PAGE * PAGE)]
            else:
                runs = _zero_runs(data)
            for start, length in runs:
                _punch(fd, at + start, length)
                punched += length
            at += len(data)
    finally:
        os.close(fd)
    return punched


def _zero_runs(data):
    """(offset, length) of each run of whole all-zero pages in data."""
    runs, start = [], None
    view = memoryview(data)
    for page in range(0, len(data) - PAGE + 1, PAGE):
        if view[page:page + PAGE] == _ZEROS[:PAGE]:
            start = page if start is None else start
        elif start is not None:
            runs.append((start, page - start))
            start = None
    if start is not None:
        runs.append((start, len(data) // PAGE * PAGE - start))
    return runs


class GcoreCommand(gdb.Command):
    """Write a core file of the process that holds every fiber's stack.
Usage: vmstack-gcore FILE
gdb's gcore reads memory in 1 MiB blocks and leaves out the rest of a
mapping from the first block it cannot read whole; in vmstack's default
guard mode (MADV_GUARD_INSTALL) the stacks and their guard pages share one
mapping, so fiber stacks would be missing.  This runs gcore, then copies
what gcore left out of those mappings, page by page around the guards,
into FILE.  Pages of zeros, which gcore writes for every page the process
never touched, are then holes of FILE, as in the kernel's own cores: FILE
takes about the room of the memory in use."""

    def __init__(self):
        super().__init__("vmstack-gcore", gdb.COMMAND_FILES, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        if len(args) != 1:
            raise gdb.GdbError("usage: vmstack-gcore FILE")
        path = args[0]
        inf = gdb.selected_inferior()
        if inf.pid == 0:
            raise gdb.GdbError("vmstack-gcore: no live process (run the program or attach to it)")
        log = gdb.execute("gcore %s" % path, to_string=True)
        failed = sorted({int(a, 16) for a in _READ_FAILED.findall(log)})
        try:
            segments = load_segments(path)
        except (OSError, VmsError) as e:
            raise gdb.GdbError("vmstack-gcore: %s" % e)
        copied = missing = 0
        with open(path, "r+b") as out:
            for vaddr in failed:
                if vaddr not in segments:
                    continue
                offset, size = segments[vaddr]
                missing += copy_readable(inf, out, vaddr, offset, size)
                copied += size
        try:
            punched = dig_holes(path)
        except OSError as e:
            raise gdb.GdbError("vmstack-gcore: %s written, but its zeros stay on disk: fallocate: %s" % (path, e))
        print("vmstack-gcore: %s written; %d mapping%s copied again around guard pages (%d KiB, %d pages unreadable); "
              "%d KiB of zeros left as holes, %d KiB on disk"
              % (path, len(failed), "" if len(failed) == 1 else "s", copied // 1024, missing, punched // 1024,
                 os.stat(path).st_blocks // 2))


InfoFibers()
FiberCommand()
GcoreCommand()
