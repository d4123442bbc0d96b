/* SPDX-License-Identifier: MIT */
/*
 * file:line for the overflow report, from a module's DWARF line table
 * (.debug_line, versions 2 to 5), read by hand from the module's file as
 * symbols.c maps it: async-signal-safe (no allocation, no lock, no
 * library), so that the report names lines as 'vmstack trace' does with
 * libdw.  The first lookup in a module lists the address range of each
 * sequence of its line programs (a fresh mapping, as symbols.c's index);
 * a lookup then runs only the program whose sequence holds the address.  Compressed sections (separate debug files) and split DWARF are
 * not read: the report then names no line.  Every read is checked
 * against the section's end.
 */
#include "fault/fault.h"

#include <string.h>
#include <sys/mman.h>

enum {
    DW_LNS_copy = 1, DW_LNS_advance_pc, DW_LNS_advance_line, DW_LNS_set_file, DW_LNS_set_column,
    DW_LNS_negate_stmt, DW_LNS_set_basic_block, DW_LNS_const_add_pc, DW_LNS_fixed_advance_pc,
    DW_LNE_end_sequence = 1, DW_LNE_set_address = 2,
    DW_LNCT_path = 1,
    DW_FORM_block2 = 0x03, DW_FORM_block4 = 0x04, DW_FORM_data2 = 0x05, DW_FORM_data4 = 0x06,
    DW_FORM_data8 = 0x07, DW_FORM_string = 0x08, DW_FORM_block = 0x09, DW_FORM_block1 = 0x0a,
    DW_FORM_data1 = 0x0b, DW_FORM_sdata = 0x0d, DW_FORM_strp = 0x0e, DW_FORM_udata = 0x0f,
    DW_FORM_data16 = 0x1e, DW_FORM_line_strp = 0x1f,
};

/* A bounded reader: past the end it reads zeros and sets bad. */
struct rd {
    const unsigned char *p, *end;
    bool bad;
};

static uint64_t fixed(struct rd *r, unsigned n)
{
    uint64_t v = 0;

    if ((size_t)(r->end - r->p) < n) {
        r->bad = true;
        r->p = r->end;
        return 0;
    }
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i); /* little-endian: x86-64 and aarch64 */
    r->p += n;
    return v;
}

static uint64_t uleb(struct rd *r)
{
    uint64_t v = 0;
    unsigned shift = 0;

    while (r->p < r->end) {
        unsigned char b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            return v;
    }
    r->bad = true;
    return v;
}

static int64_t sleb(struct rd *r)
{
    uint64_t v = 0;
    unsigned shift = 0;
    unsigned char b = 0;

    while (r->p < r->end) {
        b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= ~(uint64_t)0 << shift;
            return (int64_t)v;
        }
    }
    r->bad = true;
    return 0;
}

static const char *cstr(struct rd *r)
{
    const unsigned char *s = r->p;
    const unsigned char *nul = memchr(s, '\0', (size_t)(r->end - r->p));

    if (!nul) {
        r->bad = true;
        r->p = r->end;
        return NULL;
    }
    r->p = nul + 1;
    return (const char *)s;
}

/* The string at off in a string section, NULL when outside it or not terminated. */
static const char *str_at(const struct vms_dwarf *d, bool line_str, uint64_t off)
{
    const char *s = line_str ? d->line_str : d->str;
    size_t size = line_str ? d->line_str_size : d->str_size;

    return s && off < size && memchr(s + off, '\0', size - off) ? s + off : NULL;
}

/* One unit's header, as the program and its file table need it. */
struct unit {
    unsigned version, offset_size, min_inst, line_range, opcode_base;
    int line_base;
    const unsigned char *lengths;   /* of the standard opcodes */
    const unsigned char *files;     /* the file table (v5: its entry formats first) */
    const unsigned char *program, *end;
};

static void skip(struct rd *r, uint64_t n)
{
    if (n > (uint64_t)(r->end - r->p)) {
        r->bad = true;
        r->p = r->end;
    } else {
        r->p += n;
    }
}

/* Reads one attribute of form form (v5 tables of directories and files): the string when it is one. */
static const char *form_value(struct rd *r, const struct vms_dwarf *d, const struct unit *u, uint64_t form)
{
    uint64_t n;

    switch (form) {
    case DW_FORM_string: return cstr(r);
    case DW_FORM_line_strp: return str_at(d, true, fixed(r, u->offset_size));
    case DW_FORM_strp: return str_at(d, false, fixed(r, u->offset_size));
    case DW_FORM_udata: uleb(r); return NULL;
    case DW_FORM_sdata: sleb(r); return NULL;
    case DW_FORM_data1: n = 1; break;
    case DW_FORM_data2: n = 2; break;
    case DW_FORM_data4: n = 4; break;
    case DW_FORM_data8: n = 8; break;
    case DW_FORM_data16: n = 16; break;
    case DW_FORM_block: n = uleb(r); break;
    case DW_FORM_block1: n = fixed(r, 1); break;
    case DW_FORM_block2: n = fixed(r, 2); break;
    case DW_FORM_block4: n = fixed(r, 4); break;
    default: r->bad = true; return NULL; /* strx and the like: not read */
    }
    skip(r, n);
    return NULL;
}

/* The v5 table of (content type, form) pairs and its entries: entry idx's path, or NULL; r after the table. */
static const char *v5_entries(struct rd *r, const struct vms_dwarf *d, const struct unit *u, uint64_t idx)
{
    unsigned nformats = (unsigned)fixed(r, 1);
    const unsigned char *formats = r->p;
    const char *found = NULL;
    uint64_t count;

    for (unsigned i = 0; i < nformats; i++) {
        uleb(r);
        uleb(r);
    }
    count = uleb(r);
    for (uint64_t e = 0; e < count && !r->bad; e++) {
        struct rd f = { formats, r->end, false };
        for (unsigned i = 0; i < nformats && !r->bad; i++) {
            uint64_t type = uleb(&f), form = uleb(&f);
            const char *s = form_value(r, d, u, form);
            if (e == idx && type == DW_LNCT_path)
                found = s;
        }
    }
    return r->bad ? NULL : found;
}

/* The name of file number file (1-based before v5, 0-based since). */
static const char *file_name(const struct vms_dwarf *d, const struct unit *u, uint64_t file)
{
    struct rd r = { u->files, u->program, false };

    if (u->version >= 5) {
        v5_entries(&r, d, u, UINT64_MAX); /* the directories */
        return v5_entries(&r, d, u, file);
    }
    while (!r.bad && r.p < r.end && *r.p) /* the include directories */
        cstr(&r);
    r.p++;
    for (uint64_t i = 1; !r.bad && r.p < r.end && *r.p; i++) {
        const char *name = cstr(&r);
        uleb(&r);
        uleb(&r);
        uleb(&r);
        if (i == file)
            return r.bad ? NULL : name;
    }
    return NULL;
}

/* The unit's header from r (after its length); false for what is not read. */
static bool unit_header(struct rd *r, struct unit *u)
{
    uint64_t header_len;

    u->version = (unsigned)fixed(r, 2);
    if (u->version < 2 || u->version > 5)
        return false;
    if (u->version >= 5 && (fixed(r, 1) != 8 || fixed(r, 1) != 0)) /* address size, segment selector size */
        return false;
    header_len = fixed(r, u->offset_size);
    if (r->bad || header_len > (uint64_t)(r->end - r->p))
        return false;
    u->program = r->p + header_len;
    u->min_inst = (unsigned)fixed(r, 1);
    if (u->version >= 4 && fixed(r, 1) != 1) /* VLIW operations: not on these machines */
        return false;
    fixed(r, 1); /* default_is_stmt */
    u->line_base = (int)(int8_t)fixed(r, 1);
    u->line_range = (unsigned)fixed(r, 1);
    u->opcode_base = (unsigned)fixed(r, 1);
    u->lengths = r->p;
    if (r->bad || !u->line_range || !u->opcode_base || u->opcode_base - 1u > (size_t)(u->program - r->p))
        return false;
    u->files = r->p + u->opcode_base - 1;
    return true;
}

struct row {
    uint64_t addr, file;
    int64_t line;
};

/* What a line program is run for: a lookup (pc, the row that holds it) or the index (each sequence's range). */
struct walk {
    uint64_t pc;
    struct row hit;
    bool found;
    struct vms_dwarf_seq *seqs; /* NULL: count only */
    size_t nseqs;
    const unsigned char *unit;
};

/* A row of the program: the lookup's test, or the end of a sequence for the index. */
static bool on_row(struct walk *w, const struct row *prev, bool have_prev, const struct row *st, bool end_seq,
                   uint64_t seq_lo)
{
    if (w->pc != UINT64_MAX) {
        if (have_prev && prev->addr <= w->pc && w->pc < st->addr) {
            w->hit = *prev;
            w->found = true;
        }
        return w->found;
    }
    if (end_seq && st->addr > seq_lo && seq_lo) { /* sequences at 0: functions the linker dropped */
        if (w->seqs)
            w->seqs[w->nseqs] = (struct vms_dwarf_seq){ seq_lo, st->addr, w->unit };
        w->nseqs++;
    }
    return false;
}

/* Runs the unit's line program, each row to on_row; true when it ends the run. */
static bool run_program(const struct unit *u, struct walk *w)
{
    struct rd r = { u->program, u->end, false };
    struct row st = { 0, 1, 1 }, prev = { 0 };
    bool have_prev = false;
    uint64_t seq_lo = 0;

    while (!r.bad && r.p < r.end) {
        unsigned op = (unsigned)fixed(&r, 1);
        bool emit = false, end_seq = false;

        if (op >= u->opcode_base) {
            unsigned adj = op - u->opcode_base;
            st.addr += (uint64_t)(adj / u->line_range) * u->min_inst;
            st.line += u->line_base + (int)(adj % u->line_range);
            emit = true;
        } else if (op == 0) {
            uint64_t len = uleb(&r);
            const unsigned char *next;
            unsigned sub;
            if (r.bad || len == 0 || len > (uint64_t)(r.end - r.p))
                return false;
            next = r.p + len;
            sub = (unsigned)fixed(&r, 1);
            if (sub == DW_LNE_end_sequence)
                emit = end_seq = true;
            else if (sub == DW_LNE_set_address && len == 9)
                st.addr = fixed(&r, 8);
            r.p = next;
        } else if (op == DW_LNS_copy) {
            emit = true;
        } else if (op == DW_LNS_advance_pc) {
            st.addr += uleb(&r) * u->min_inst;
        } else if (op == DW_LNS_advance_line) {
            st.line += sleb(&r);
        } else if (op == DW_LNS_set_file) {
            st.file = uleb(&r);
        } else if (op == DW_LNS_const_add_pc) {
            st.addr += (uint64_t)((255 - u->opcode_base) / u->line_range) * u->min_inst;
        } else if (op == DW_LNS_fixed_advance_pc) {
            st.addr += fixed(&r, 2);
        } else {
            for (unsigned i = 0; i < u->lengths[op - 1]; i++) /* the operands of any other: skipped */
                uleb(&r);
        }
        if (!emit)
            continue;
        if (!have_prev)
            seq_lo = st.addr;
        if (on_row(w, &prev, have_prev, &st, end_seq, seq_lo))
            return true;
        prev = st;
        have_prev = !end_seq;
        if (end_seq)
            st = (struct row){ 0, 1, 1 };
    }
    return false;
}

/* The unit at p (its length first) into u; *next is the unit after it.  false for what is not read. */
static bool unit_at(const struct vms_dwarf *d, const unsigned char *p, struct unit *u, const unsigned char **next)
{
    const unsigned char *end = (const unsigned char *)d->line + d->line_size;
    struct rd r = { p, end, false };
    uint64_t len = fixed(&r, 4);

    *next = end;
    u->offset_size = 4;
    if (len == 0xffffffff) {
        u->offset_size = 8;
        len = fixed(&r, 8);
    } else if (len >= 0xfffffff0) {
        return false;
    }
    if (r.bad || len > (uint64_t)(end - r.p))
        return false;
    u->end = r.p + len;
    *next = u->end;
    r.end = u->end;
    return unit_header(&r, u);
}

/* Every unit's program, each row to w; stops when on_row says so. */
static void walk_all(const struct vms_dwarf *d, struct walk *w)
{
    const unsigned char *p = (const unsigned char *)d->line, *end = p + d->line_size, *next;

    for (; p < end; p = next) {
        struct unit u;
        w->unit = p;
        if (unit_at(d, p, &u, &next) && run_program(&u, w))
            return;
        if (next <= p)
            return;
    }
}

bool vms__dwarf_index(struct vms_dwarf *d)
{
    struct walk w = { .pc = UINT64_MAX };
    void *m;

    walk_all(d, &w);
    if (!w.nseqs)
        return false;
    m = mmap(NULL, w.nseqs * sizeof *w.seqs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return false;
    w.seqs = m;
    w.nseqs = 0;
    walk_all(d, &w);
    mprotect(m, w.nseqs * sizeof *w.seqs, PROT_READ);
    d->seqs = w.seqs;
    d->nseqs = w.nseqs;
    return true;
}

bool vms__dwarf_line(const struct vms_dwarf *d, uint64_t pc, const char **file, unsigned *line)
{
    struct walk w = { .pc = pc };
    const char *name;
    struct unit u;

    for (size_t i = 0; i < d->nseqs && !w.found; i++) {
        const unsigned char *next;
        if (pc < d->seqs[i].lo || pc >= d->seqs[i].hi || !unit_at(d, d->seqs[i].unit, &u, &next))
            continue;
        run_program(&u, &w);
    }
    if (!w.found || w.hit.line <= 0 || w.hit.line > (int64_t)UINT32_MAX || !(name = file_name(d, &u, w.hit.file)))
        return false;
    *file = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    *line = (unsigned)w.hit.line;
    return true;
}
