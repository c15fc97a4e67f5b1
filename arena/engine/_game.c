/* The Azul rules engine as a CPython C extension: the compiled build of arena/engine/game.py.
 *
 * Built by ``python -m arena.engine.build_compiled`` (``make engine-compiled``) into
 * arena/engine/_compiled/game.<ext>, where ``arena.engine`` finds it as ``arena.engine.game``.
 * The pure-Python game.py is the specification and the fallback: this file plays the same
 * games move for move (same legal-move order, same dealing generator, same errors), which
 * tests/engine/test_parity.py checks against it position by position.
 *
 * Why C and not mypyc: the public API's hot loop (legal_moves/apply/is_over, ~70 moves a
 * game) spends most of its time creating and reading Python ints and lists. Here the whole
 * position is one C struct (copy() is a memcpy), legal_moves() fills a list with the interned
 * Move objects of arena.engine.tables, and apply() reads the move's three small ints.
 *
 * What stays in Python (arena/engine/shared.py): the exceptions, RoundLog and Breakdown
 * classes, the checks of injected deals, the slow path of apply() for moves that are not
 * interned tuples, seeds that are not 64-bit ints, and from_observation; the readers
 * (view, record, render) are called as they are by the pure engine.
 *
 * Attributes that are lists in the pure engine (bag, boards, board.line_count, ...) are
 * returned as fresh lists here: read-only snapshots. Assign the whole attribute to change it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#define N_COLOURS 5
#define MARKER 5
#define FULL 31
#define FLOOR_SLOTS 7
#define MAX_PLAYERS 4
#define MAX_FACTORIES 9
#define N_CODES 3125
#define MAX_DECISIONS 96
/* A round has at most 9 factories x 4 colours + 5 centre colours drafts and 4 x 5 gray
 * placements (61): the bound only matters for logs assigned through ``rounds``. */
#define PLACE_BASE 300 /* decision codes: drafts 0..299, placements 300..304 */

enum { DRAFT = 0, PLACE = 1, OVER = 2 };
enum { END_NONE = 0, END_NORMAL = 1, END_LIMIT = 2, END_NO_TILES = 3 };

/* ------------------------------------------------------------------ tables */

static uint8_t CODE_COUNTS[N_CODES][N_COLOURS];
static uint8_t CODE_TILES[N_CODES];
static uint8_t CODE_MASK[N_CODES]; /* colours present */
static const int POW5[5] = {1, 5, 25, 125, 625};
static uint8_t RUN[32][5];
static uint8_t PLACE_POINTS[6][6];
static const int FLOOR_PENALTY[8] = {0, 1, 2, 4, 6, 8, 11, 14};
static uint64_t ORDERED_DRAWS[101];
static uint8_t POPCOUNT[32];
static const uint64_t LCG_MUL = 6364136223846793005ULL;
static const uint64_t LCG_ADD = 1442695040888963407ULL;

/* Interned objects from arena.engine.tables (owned references, kept for the module's life). */
static PyObject *MOVES[PLACE_BASE];       /* draft decision code -> Move */
static PyObject *PLACES[5];
static PyObject *LINE_MOVES[10][5][32][6]; /* [source index][colour][accept mask] -> moves */
static PyObject *DECISIONS[3];
static PyObject *DECISION_VALUES[3]; /* each Decision's value ("draft", ...) */
static PyObject *END_REASONS[4]; /* [0] is None */
static PyObject *VARIANTS[2];
static PyObject *DRAFT_MOVES[10];   /* n factories -> dict (the pure engine's table) */
static PyObject *SMALL_INTS[16];

/* From arena.engine.shared and tables (Python owners of the cold parts). */
static PyObject *IllegalMove, *IllegalDeal, *BreakdownType, *RoundLogType;
static PyObject *take_deal_fn, *unlisted_move_fn, *from_observation_fn, *seed_state_fn;
static PyObject *DecisionType, *EndReasonType, *VariantType;

/* ------------------------------------------------------------------ state */

typedef struct {
    int8_t line_colour[5];
    uint8_t line_count[5];
    uint8_t accept[5]; /* per colour: the pattern lines that can take it */
    uint8_t row_cells[5];
    uint8_t row_colours[5];
    uint8_t col_rows[5];
    uint8_t colour_cols[5]; /* kept on the gray wall only, like the pure engine */
    int8_t wall[25];
    uint8_t floor[FLOOR_SLOTS];
    uint8_t floor_len;
    long long score;
} BoardS;

typedef struct {
    long number;
    int first_player;
    int n_codes;
    int n_scores; /* 0 until the round is scored */
    int n_dec;
    uint16_t codes[MAX_FACTORIES];
    long long scores[MAX_PLAYERS];
    uint16_t dec[MAX_DECISIONS]; /* seat << 9 | decision code */
} RoundS;

/* A finished round: immutable, shared by copies (a persistent list, newest first). */
typedef struct Hist {
    Py_ssize_t refcnt;
    struct Hist *prev;
    PyObject *cached; /* its RoundLog, built on first read */
    RoundS r;
} Hist;

typedef struct {
    PyObject_HEAD
    /* --- copied by memcpy from here --- */
    int n_players, n_factories, gray;
    int decision, end_reason;
    int current_player, first_player, next_first;
    int tiling_player, tiling_line;
    int marker_in_centre;
    int place_mask;
    int table_tiles;
    int has_round;
    long round, round_limit;
    Py_ssize_t deal_pos;
    uint64_t rng;
    int16_t bag[5], lid[5], centre[5];
    uint16_t factories[MAX_FACTORIES];
    BoardS boards[MAX_PLAYERS];
    RoundS cur;
    Hist *hist;
    Py_ssize_t n_hist;
    PyObject *seed;  /* as given */
    PyObject *deals; /* list, or NULL */
    /* The current round's RoundLog once read (the referee reads rounds[-1] on every move):
     * kept up to date move by move until the round ends. Not shared with copies. */
    PyObject *cur_log;
} GameObject;

#define STATE_START(g) ((char *)&(g)->n_players)
#define STATE_SIZE (sizeof(GameObject) - offsetof(GameObject, n_players))

typedef struct {
    PyObject_HEAD
    GameObject *game; /* a view of game->boards[seat], or NULL: its own state */
    int seat;
    BoardS own;
} BoardObject;

static PyTypeObject GameType;
static PyTypeObject BoardType;

static inline BoardS *board_state(BoardObject *b) {
    return b->game ? &b->game->boards[b->seat] : &b->own;
}

static void hist_release(Hist *h) {
    while (h && --h->refcnt == 0) {
        Hist *prev = h->prev;
        Py_XDECREF(h->cached);
        PyMem_Free(h);
        h = prev;
    }
}

/* ------------------------------------------------------------------ helpers */

static inline PyObject *small_int(long v) {
    if (v >= 0 && v < 16) {
        Py_INCREF(SMALL_INTS[v]);
        return SMALL_INTS[v];
    }
    return PyLong_FromLong(v);
}

static PyObject *list_of_int8(const int8_t *v, int n) {
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLong(v[i]);
        if (!x) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, x);
    }
    return out;
}

static PyObject *list_of_uint8(const uint8_t *v, int n) {
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLong(v[i]);
        if (!x) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, x);
    }
    return out;
}

static PyObject *list_of_int16(const int16_t *v, int n) {
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLong(v[i]);
        if (!x) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, x);
    }
    return out;
}

/* Read a sequence of ``n`` ints within [lo, hi] (``n`` < 0: any length up to -n, returned). */
static Py_ssize_t read_ints(PyObject *value, const char *what, Py_ssize_t n, long lo, long hi,
                            long *out) {
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "cannot delete %s", what);
        return -1;
    }
    PyObject *seq = PySequence_Fast(value, what);
    if (!seq) return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    if ((n >= 0 && len != n) || (n < 0 && len > -n)) {
        PyErr_Format(PyExc_ValueError, "%s: %zd items, expected %s%zd", what, len,
                     n < 0 ? "at most " : "", n < 0 ? -n : n);
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
        if (v < lo || v > hi) {
            PyErr_Format(PyExc_ValueError, "%s: %ld is out of range %ld..%ld", what, v, lo, hi);
            Py_DECREF(seq);
            return -1;
        }
        out[i] = v;
    }
    Py_DECREF(seq);
    return len;
}

static int read_long(PyObject *value, const char *what, long lo, long hi, long *out) {
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "cannot delete %s", what);
        return -1;
    }
    long v = PyLong_AsLong(value);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s: %ld is out of range %ld..%ld", what, v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* An exact int of one digit (a move's fields), read without PyLong_AsLong's overflow checks. */
static inline int small_long(PyObject *o, long *out) {
    if (!PyLong_CheckExact(o)) return 0;
#if PY_VERSION_HEX < 0x030C0000
    Py_ssize_t size = Py_SIZE(o);
    if (size == 0) { *out = 0; return 1; }
    if (size == 1 || size == -1) {
        *out = (long)((PyLongObject *)o)->ob_digit[0] * (long)size;
        return 1;
    }
    return 0;
#else
    int overflow;
    long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) { PyErr_Clear(); return 0; }
    *out = v;
    return 1;
#endif
}

static inline uint64_t splitmix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* tables.seed_state: 64-bit ints here, anything else (None, big ints) in Python. */
static int seed_state(PyObject *seed, uint64_t *out) {
    if (PyLong_CheckExact(seed)) {
        unsigned long long v = PyLong_AsUnsignedLongLong(seed);
        if (!(v == (unsigned long long)-1 && PyErr_Occurred())) {
            *out = splitmix((uint64_t)v * 0xBF58476D1CE4E5B9ULL);
            return 0;
        }
        PyErr_Clear();
    }
    PyObject *state = PyObject_CallOneArg(seed_state_fn, seed);
    if (!state) return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(state);
    Py_DECREF(state);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

static inline int decision_code(int source, int colour, int line) {
    int si = source < 0 ? MAX_FACTORIES : source;
    int li = line < 0 ? 5 : line;
    return (si * N_COLOURS + colour) * 6 + li;
}

/* ------------------------------------------------------------------ board rules */

static void board_init(BoardS *b) {
    memset(b, 0, sizeof(*b));
    for (int i = 0; i < 5; i++) {
        b->line_colour[i] = -1;
        b->accept[i] = FULL;
    }
    memset(b->wall, -1, sizeof(b->wall));
}

static void board_refresh_accept(BoardS *b) {
    uint8_t acc[5] = {0, 0, 0, 0, 0};
    for (int line = 0; line < 5; line++) {
        if (b->line_count[line] == line + 1) continue;
        int bit = 1 << line;
        int colour = b->line_colour[line];
        if (colour >= 0) {
            acc[colour] |= bit;
        } else {
            int free = FULL & ~b->row_colours[line];
            for (int c = 0; c < 5; c++)
                if (free >> c & 1) acc[c] |= bit;
        }
    }
    memcpy(b->accept, acc, 5);
}

/* Board.place: a tile on the wall; returns its points (the score is the caller's). */
static int board_place(BoardS *b, int row, int col, int colour) {
    int cells = b->row_cells[row] | 1 << col;
    b->row_cells[row] = (uint8_t)cells;
    b->row_colours[row] |= (uint8_t)(1 << colour);
    int rows = b->col_rows[col] | 1 << row;
    b->col_rows[col] = (uint8_t)rows;
    b->colour_cols[colour] |= (uint8_t)(1 << col);
    b->wall[row * 5 + col] = (int8_t)colour;
    return PLACE_POINTS[RUN[cells][col]][RUN[rows][row]];
}

/* The line is emptied: the colours its wall row lacks fit on it again. */
static inline void board_free_line(BoardS *b, int line) {
    b->line_count[line] = 0;
    b->line_colour[line] = -1;
    int bit = 1 << line;
    int free = FULL & ~b->row_colours[line];
    for (int c = 0; c < 5; c++)
        if (free >> c & 1) b->accept[c] |= (uint8_t)bit;
}

static inline int board_full_rows(const BoardS *b) {
    int n = 0;
    for (int i = 0; i < 5; i++) n += b->row_cells[i] == FULL;
    return n;
}

typedef struct { long long rounds; int rows, columns, colours; long long total; } BreakdownS;

static BreakdownS board_breakdown(const BoardS *b) {
    BreakdownS out;
    int rows = board_full_rows(b), cols = 0, colours = 0;
    for (int i = 0; i < 5; i++) cols += b->col_rows[i] == FULL;
    int count[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 25; i++)
        if (b->wall[i] >= 0 && b->wall[i] < 5) count[b->wall[i]]++;
    for (int c = 0; c < 5; c++) colours += count[c] == 5;
    out.rounds = b->score;
    out.rows = rows * 2;
    out.columns = cols * 7;
    out.colours = colours * 10;
    out.total = b->score + out.rows + out.columns + out.colours;
    return out;
}

static PyObject *breakdown_object(const BoardS *b) {
    BreakdownS d = board_breakdown(b);
    PyObject *kw = Py_BuildValue("{s:L,s:i,s:i,s:i,s:L}", "rounds", d.rounds, "rows", d.rows,
                                 "columns", d.columns, "colours", d.colours, "total", d.total);
    if (!kw) return NULL;
    PyObject *empty = PyTuple_New(0);
    if (!empty) { Py_DECREF(kw); return NULL; }
    PyObject *out = PyObject_Call(BreakdownType, empty, kw);
    Py_DECREF(empty);
    Py_DECREF(kw);
    return out;
}

/* ------------------------------------------------------------------ dealing */

/* Game._draw: the same generator steps and the same swap-removes as the pure engine. */
static int draw(GameObject *g, uint16_t *codes) {
    uint8_t tiles[100];
    int total = 0, dealt = 0, left = g->n_factories, n = 0;
    uint64_t state = g->rng;
    for (int c = 0; c < 5; c++)
        for (int k = 0; k < g->bag[c]; k++) tiles[total++] = (uint8_t)c;
    while (left) {
        int fast = total >> 2;
        if (fast > left) fast = left;
        left -= fast;
        dealt += fast << 2;
        for (int f = 0; f < fast; f++) {
            state = state * LCG_MUL + LCG_ADD;
            uint64_t r = (uint64_t)(((unsigned __int128)(state >> 16) * ORDERED_DRAWS[total]) >> 48);
            int code = 0;
            for (int d = 0; d < 3; d++) {
                int i = (int)(r % (uint64_t)total);
                r /= (uint64_t)total;
                total--;
                int tile = tiles[i];
                tiles[i] = tiles[total];
                code += POW5[tile];
                g->bag[tile]--;
            }
            total--;
            int tile = tiles[r];
            tiles[r] = tiles[total];
            code += POW5[tile];
            g->bag[tile]--;
            codes[n++] = (uint16_t)code;
        }
        if (!left) break;
        left--;
        int code = 0;
        for (int k = 0; k < 4; k++) {
            if (!total) {
                /* The bag is empty: the lid is poured in and becomes the bag. */
                for (int c = 0; c < 5; c++) {
                    g->bag[c] = g->lid[c];
                    g->lid[c] = 0;
                    for (int j = 0; j < g->bag[c]; j++) tiles[total++] = (uint8_t)c;
                }
                if (!total) break;
            }
            state = state * LCG_MUL + LCG_ADD;
            int i = (int)(((state >> 16) * (uint64_t)total) >> 48);
            total--;
            int tile = tiles[i];
            tiles[i] = tiles[total];
            code += POW5[tile];
            g->bag[tile]--;
            dealt++;
        }
        codes[n++] = (uint16_t)code;
    }
    g->rng = state;
    return dealt;
}

static PyObject *int16_list(const int16_t *v) { return list_of_int16(v, 5); }

/* An injected deal: checked and taken by shared.take_deal (the owner of those rules). */
static int take_injected_deal(GameObject *g, uint16_t *codes, int *dealt) {
    PyObject *bag = int16_list(g->bag), *lid = int16_list(g->lid);
    PyObject *res = NULL, *pos = NULL, *rnd = NULL;
    int rc = -1;
    if (!bag || !lid) goto done;
    pos = PyLong_FromSsize_t(g->deal_pos);
    rnd = PyLong_FromLong(g->round);
    if (!pos || !rnd) goto done;
    PyObject *args[6] = {g->deals, pos, rnd, SMALL_INTS[g->n_factories], bag, lid};
    res = PyObject_Vectorcall(take_deal_fn, args, 6, NULL);
    if (!res) goto done;
    /* (codes, dealt, bag, lid) */
    long cv[MAX_FACTORIES], bv[5], lv[5], d;
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 4) {
        PyErr_SetString(PyExc_SystemError, "take_deal returned no 4-tuple");
        goto done;
    }
    if (read_ints(PyTuple_GET_ITEM(res, 0), "deal", g->n_factories, 0, N_CODES - 1, cv) < 0 ||
        read_long(PyTuple_GET_ITEM(res, 1), "dealt", 0, 100, &d) < 0 ||
        read_ints(PyTuple_GET_ITEM(res, 2), "bag", 5, -32768, 32767, bv) < 0 ||
        read_ints(PyTuple_GET_ITEM(res, 3), "lid", 5, -32768, 32767, lv) < 0)
        goto done;
    for (int i = 0; i < g->n_factories; i++) codes[i] = (uint16_t)cv[i];
    for (int c = 0; c < 5; c++) {
        g->bag[c] = (int16_t)bv[c];
        g->lid[c] = (int16_t)lv[c];
    }
    *dealt = (int)d;
    rc = 0;
done:
    Py_XDECREF(bag);
    Py_XDECREF(lid);
    Py_XDECREF(pos);
    Py_XDECREF(rnd);
    Py_XDECREF(res);
    return rc;
}

static int start_round(GameObject *g) {
    uint16_t codes[MAX_FACTORIES];
    int dealt;
    for (int c = 0; c < 5; c++) {
        if (g->bag[c] > 20 || g->lid[c] > 20) { /* only a position edited by hand gets here */
            PyErr_SetString(PyExc_ValueError,
                            "the bag or the lid holds more than the 20 tiles of a colour");
            return -1;
        }
    }
    if (g->deals == NULL) {
        dealt = draw(g, codes);
    } else {
        if (take_injected_deal(g, codes, &dealt) < 0) return -1; /* nothing moved */
        g->deal_pos++;
    }
    g->round++;
    g->first_player = g->next_first;
    g->current_player = g->next_first;
    g->marker_in_centre = 1;
    g->decision = DRAFT;
    memcpy(g->factories, codes, sizeof(codes));
    g->table_tiles = dealt;
    if (g->has_round) { /* the finished round joins the shared history */
        Hist *h = PyMem_Malloc(sizeof(Hist));
        if (!h) { PyErr_NoMemory(); return -1; }
        h->refcnt = 1;
        h->prev = g->hist;
        h->cached = NULL;
        h->r = g->cur;
        g->hist = h;
        g->n_hist++;
    }
    Py_CLEAR(g->cur_log);
    g->has_round = 1;
    g->cur.number = g->round;
    g->cur.first_player = g->first_player;
    g->cur.n_codes = g->n_factories;
    memcpy(g->cur.codes, codes, sizeof(codes));
    g->cur.n_scores = 0;
    g->cur.n_dec = 0;
    return 0;
}

/* ------------------------------------------------------------------ tiling */

static int end_round(GameObject *g) {
    int complete = 0;
    Py_CLEAR(g->cur_log); /* read again, it has the scores */
    for (int p = 0; p < g->n_players; p++) {
        g->cur.scores[p] = g->boards[p].score;
        for (int r = 0; r < 5; r++) complete |= g->boards[p].row_cells[r] == FULL;
    }
    g->cur.n_scores = g->n_players;
    if (complete) {
        g->end_reason = END_NORMAL;
        g->decision = OVER;
        return 0;
    }
    if (g->round >= g->round_limit) {
        g->end_reason = END_LIMIT;
        g->decision = OVER;
        return 0;
    }
    int any = 0;
    for (int c = 0; c < 5; c++) any |= g->bag[c] | g->lid[c];
    if (!any) {
        g->end_reason = END_NO_TILES;
        g->decision = OVER;
        return 0;
    }
    return start_round(g);
}

/* The floor's penalty (the score stays >= 0) and its tiles to the lid. */
static void floor_to_lid(GameObject *g, BoardS *b) {
    if (b->floor_len) {
        long long score = b->score - FLOOR_PENALTY[b->floor_len];
        b->score = score < 0 ? 0 : score;
        for (int i = 0; i < b->floor_len; i++)
            if (b->floor[i] != MARKER) g->lid[b->floor[i]]++;
        b->floor_len = 0;
    }
}

static int tile_coloured(GameObject *g) {
    for (int seat = 0; seat < g->n_players; seat++) {
        BoardS *b = &g->boards[seat];
        for (int line = 0; line < 5; line++) {
            if (b->line_count[line] != line + 1) continue;
            int colour = b->line_colour[line];
            int col = (line + colour) % 5;
            int cells = b->row_cells[line] | 1 << col;
            b->row_cells[line] = (uint8_t)cells;
            b->row_colours[line] |= (uint8_t)(1 << colour);
            int rows = b->col_rows[col] | 1 << line;
            b->col_rows[col] = (uint8_t)rows;
            b->wall[line * 5 + col] = (int8_t)colour;
            b->score += PLACE_POINTS[RUN[cells][col]][RUN[rows][line]];
            g->lid[colour] += line;
            board_free_line(b, line);
        }
        floor_to_lid(g, b);
    }
    g->tiling_player = g->n_players;
    g->tiling_line = 0;
    return end_round(g);
}

/* Game._continue_tiling: until a gray-wall choice is needed or the round is done. */
static int continue_tiling(GameObject *g) {
    if (!g->gray) return tile_coloured(g);
    int seat = g->tiling_player;
    while (seat < g->n_players) {
        BoardS *b = &g->boards[seat];
        int line = g->tiling_line;
        while (line < 5) {
            if (b->line_count[line] == line + 1) {
                int colour = b->line_colour[line];
                int options = FULL & ~(b->row_cells[line] | b->colour_cols[colour]);
                if (POPCOUNT[options] == 1) {
                    int col = __builtin_ctz((unsigned)options);
                    b->score += board_place(b, line, col, colour);
                    g->lid[colour] += line;
                    board_free_line(b, line);
                } else if (!options) {
                    int n = line + 1, free = FLOOR_SLOTS - b->floor_len;
                    int put = n < free ? n : free;
                    for (int i = 0; i < put; i++) b->floor[b->floor_len++] = (uint8_t)colour;
                    g->lid[colour] += n - put;
                    board_free_line(b, line);
                } else {
                    g->tiling_player = seat;
                    g->tiling_line = line;
                    g->place_mask = options;
                    g->current_player = seat;
                    g->decision = PLACE;
                    return 0;
                }
            }
            line++;
        }
        floor_to_lid(g, b);
        seat++;
        g->tiling_line = 0;
    }
    g->tiling_player = seat;
    g->place_mask = 0;
    return end_round(g);
}

/* ------------------------------------------------------------------ Game: creation */

static GameObject *game_alloc(PyTypeObject *type) {
    GameObject *g;
    if (type == &GameType) {
        g = PyObject_Malloc(sizeof(GameObject));
        if (!g) return (GameObject *)PyErr_NoMemory();
        PyObject_Init((PyObject *)g, type);
    } else {
        g = (GameObject *)type->tp_alloc(type, 0);
        if (!g) return NULL;
    }
    return g;
}

static PyObject *resolve_variant(PyObject *variant, int *gray) {
    if (variant == VARIANTS[0]) { *gray = 0; return variant; }
    if (variant == VARIANTS[1]) { *gray = 1; return variant; }
    if (PyUnicode_CheckExact(variant)) { /* the values, without Variant()'s Python call */
        if (PyUnicode_CompareWithASCIIString(variant, "coloured") == 0) { *gray = 0; return variant; }
        if (PyUnicode_CompareWithASCIIString(variant, "gray") == 0) { *gray = 1; return variant; }
    }
    PyObject *v = PyObject_CallOneArg(VariantType, variant); /* Variant(variant) */
    if (!v) return NULL;
    Py_DECREF(v); /* an enum member: the class keeps it alive */
    if (v == VARIANTS[0]) { *gray = 0; return v; }
    if (v == VARIANTS[1]) { *gray = 1; return v; }
    PyErr_Format(PyExc_ValueError, "%R is not a valid Variant", variant);
    return NULL;
}

/* A game before its first deal (Game._blank): what new() and from_observation start from. */
static GameObject *game_blank(PyTypeObject *type, long players, PyObject *variant, PyObject *seed,
                              long round_limit) {
    int gray;
    if (players < 2 || players > 4) {
        PyErr_Format(PyExc_ValueError, "Azul is played by 2, 3 or 4 players, not %ld", players);
        return NULL;
    }
    if (round_limit < 1) {
        PyErr_SetString(PyExc_ValueError, "round_limit must be at least 1");
        return NULL;
    }
    if (!resolve_variant(variant, &gray)) return NULL;
    uint64_t rng;
    if (seed_state(seed, &rng) < 0) return NULL;
    GameObject *g = game_alloc(type);
    if (!g) return NULL;
    memset(STATE_START(g), 0, STATE_SIZE);
    g->n_players = (int)players;
    g->n_factories = 2 * (int)players + 1;
    g->gray = gray;
    g->round_limit = round_limit;
    g->rng = rng;
    g->marker_in_centre = 1;
    for (int c = 0; c < 5; c++) g->bag[c] = 20;
    for (int p = 0; p < g->n_players; p++) board_init(&g->boards[p]);
    Py_INCREF(seed);
    g->seed = seed;
    g->deals = NULL;
    return g;
}

static long players_arg(PyObject *players) {
    long v = PyLong_Check(players) ? PyLong_AsLong(players) : -1;
    if (v == -1 && PyErr_Occurred()) PyErr_Clear();
    if (v < 2 || v > 4) {
        PyErr_Format(PyExc_ValueError, "Azul is played by 2, 3 or 4 players, not %S", players);
        return -1;
    }
    return v;
}

/* Arguments by position or keyword into ``out`` (absent ones left as they are): vectorcall,
 * so that Game.new(players=2, variant="coloured", seed=s) builds no tuple or dict. */
static int parse_args(const char *fname, const char *const *names, int n_names,
                      PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                      PyObject **out) {
    if (nargs > n_names) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", fname,
                     n_names, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) out[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = 0;
        for (int i = 0; i < n_names && !found; i++) {
            if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) {
                if (i < nargs) {
                    PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
                                 fname, names[i]);
                    return -1;
                }
                out[i] = args[nargs + k];
                found = 1;
            }
        }
        if (!found) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", fname, key);
            return -1;
        }
    }
    return 0;
}

static PyObject *Game_new(PyObject *cls, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames) {
    static const char *const names[] = {"players", "variant", "seed", "round_limit", "deals"};
    PyObject *a[5] = {NULL, VARIANTS[0], Py_None, NULL, Py_None};
    if (parse_args("new", names, 5, args, nargs, kwnames, a) < 0) return NULL;
    PyObject *players = a[0], *variant = a[1], *seed = a[2], *deals = a[4];
    long round_limit = 100;
    if (a[3]) {
        round_limit = PyLong_AsLong(a[3]);
        if (round_limit == -1 && PyErr_Occurred()) return NULL;
    }
    long n = 2;
    if (players && (n = players_arg(players)) < 0) return NULL;
    GameObject *g = game_blank((PyTypeObject *)cls, n, variant, seed, round_limit);
    if (!g) return NULL;
    if (deals != Py_None) {
        g->deals = PySequence_List(deals);
        if (!g->deals) { Py_DECREF(g); return NULL; }
    }
    if (start_round(g) < 0) { Py_DECREF(g); return NULL; }
    return (PyObject *)g;
}

static PyObject *Game_blank(PyObject *cls, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"players", "variant", "seed", "round_limit", NULL};
    PyObject *players, *variant, *seed;
    long round_limit;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOl:_blank", kwlist, &players, &variant,
                                     &seed, &round_limit))
        return NULL;
    long n = players_arg(players);
    if (n < 0) return NULL;
    return (PyObject *)game_blank((PyTypeObject *)cls, n, variant, seed, round_limit);
}

static void Game_dealloc(GameObject *g) {
    Py_XDECREF(g->seed);
    Py_XDECREF(g->deals);
    Py_XDECREF(g->cur_log);
    hist_release(g->hist);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyObject *Game_copy(GameObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames) {
    PyObject *seed = Py_None;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw > 1) {
        PyErr_SetString(PyExc_TypeError, "copy() takes at most 1 argument (seed)");
        return NULL;
    }
    if (nargs == 1) {
        seed = args[0];
    } else if (nkw == 1) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0)) ||
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "seed") != 0) {
            PyErr_Format(PyExc_TypeError, "copy() got an unexpected keyword argument %R",
                         PyTuple_GET_ITEM(kwnames, 0));
            return NULL;
        }
        seed = args[0];
    }
    uint64_t rng = self->rng;
    if (seed != Py_None && seed_state(seed, &rng) < 0) return NULL;
    GameObject *g = game_alloc(&GameType); /* a Game, as the pure engine's copy() makes */
    if (!g) return NULL;
    memcpy(STATE_START(g), STATE_START(self), STATE_SIZE);
    g->rng = rng;
    g->cur_log = NULL;
    Py_XINCREF(g->seed);
    Py_XINCREF(g->deals);
    if (g->hist) g->hist->refcnt++;
    return (PyObject *)g;
}

/* ------------------------------------------------------------------ Game: hot path */

static PyObject *Game_is_over(GameObject *self, PyObject *unused) {
    (void)unused;
    if (self->decision == OVER) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static PyObject *Game_legal_moves(GameObject *self, PyObject *unused) {
    (void)unused;
    if (self->decision == DRAFT) {
        const uint8_t *acc = self->boards[self->current_player].accept;
        /* Each (source, colour) copies all 6 slots of its table row and keeps as many as
         * it has moves: no branch on the number of lines that accept the colour. */
        PyObject *buf[(MAX_FACTORIES * 4 + 5 + 1) * 6];
        Py_ssize_t k = 0;
        for (int f = 0; f < self->n_factories; f++) {
            for (unsigned mask = CODE_MASK[self->factories[f]]; mask; mask &= mask - 1) {
                int c = __builtin_ctz(mask), m = acc[c];
                memcpy(buf + k, LINE_MOVES[f][c][m], 6 * sizeof(PyObject *));
                k += POPCOUNT[m] + 1;
            }
        }
        unsigned centre = 0;
        for (int c = 0; c < 5; c++) centre |= (unsigned)(self->centre[c] != 0) << c;
        for (; centre; centre &= centre - 1) {
            int c = __builtin_ctz(centre), m = acc[c];
            memcpy(buf + k, LINE_MOVES[MAX_FACTORIES][c][m], 6 * sizeof(PyObject *));
            k += POPCOUNT[m] + 1;
        }
        PyObject *out = PyList_New(k);
        if (!out) return NULL;
        PyObject **items = ((PyListObject *)out)->ob_item;
        for (Py_ssize_t i = 0; i < k; i++) {
            Py_INCREF(buf[i]);
            items[i] = buf[i];
        }
        return out;
    }
    if (self->decision == PLACE) {
        PyObject *out = PyList_New(POPCOUNT[self->place_mask]);
        if (!out) return NULL;
        int k = 0;
        for (int col = 0; col < 5; col++) {
            if (self->place_mask >> col & 1) {
                Py_INCREF(PLACES[col]);
                PyList_SET_ITEM(out, k++, PLACES[col]);
            }
        }
        return out;
    }
    return PyList_New(0);
}

static int log_decision(GameObject *g, int seat, int code) {
    if (g->cur.n_dec >= MAX_DECISIONS) {
        PyErr_SetString(PyExc_RuntimeError, "too many decisions in one round");
        return -1;
    }
    if (g->cur_log) { /* someone reads the log: append to it, as the pure engine does */
        PyObject *move = code >= PLACE_BASE ? PLACES[code - PLACE_BASE] : MOVES[code];
        PyObject *decisions = PyObject_GetAttrString(g->cur_log, "decisions");
        if (!decisions) return -1;
        PyObject *pair = PyTuple_Pack(2, SMALL_INTS[seat], move);
        int rc = pair ? PyList_Check(decisions) ? PyList_Append(decisions, pair) : -1 : -1;
        if (pair && rc < 0 && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "the round's decisions are no list");
        Py_XDECREF(pair);
        Py_DECREF(decisions);
        if (rc < 0) return -1;
    }
    g->cur.dec[g->cur.n_dec++] = (uint16_t)(seat << 9 | code);
    return 0;
}

static PyObject *illegal(PyObject *fmt_result) {
    if (fmt_result) {
        PyErr_SetObject(IllegalMove, fmt_result);
        Py_DECREF(fmt_result);
    }
    return NULL;
}

static PyObject *apply_place(GameObject *g, PyObject *move) {
    int col = -1;
    if (PyTuple_Check(move) && PyTuple_GET_SIZE(move) == 1 &&
        PyLong_CheckExact(PyTuple_GET_ITEM(move, 0))) {
        long v = PyLong_AsLong(PyTuple_GET_ITEM(move, 0));
        if (v >= 0 && v < 5 && (g->place_mask >> v & 1)) col = (int)v;
        else if (v == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    if (col < 0) { /* ``move in options``, as the pure engine asks it */
        for (int c = 0; c < 5 && col < 0; c++) {
            if (!(g->place_mask >> c & 1)) continue;
            int eq = PyObject_RichCompareBool(move, PLACES[c], Py_EQ);
            if (eq < 0) return NULL;
            if (eq) col = c;
        }
    }
    if (col < 0) return illegal(PyUnicode_FromFormat("%R is not a legal placement here", move));
    if (log_decision(g, g->current_player, PLACE_BASE + col) < 0) return NULL;
    BoardS *b = &g->boards[g->tiling_player];
    int line = g->tiling_line;
    int colour = b->line_colour[line];
    b->score += board_place(b, line, col, colour);
    g->lid[colour] += line;
    board_free_line(b, line);
    g->tiling_line = line + 1;
    if (continue_tiling(g) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Game_apply(GameObject *g, PyObject *move) {
    if (g->decision != DRAFT) {
        if (g->decision == PLACE) return apply_place(g, move);
        PyErr_SetString(IllegalMove, "the game is over");
        return NULL;
    }
    int source = -2, colour = 0, line = 0;
    if (PyTuple_Check(move) && PyTuple_GET_SIZE(move) == 3) {
        long sv, cv, lv;
        if (small_long(PyTuple_GET_ITEM(move, 0), &sv) && small_long(PyTuple_GET_ITEM(move, 1), &cv) &&
            small_long(PyTuple_GET_ITEM(move, 2), &lv) && sv >= -1 && sv < g->n_factories &&
            cv >= 0 && cv < 5 && lv >= -1 && lv < 5) {
            source = (int)sv;
            colour = (int)cv;
            line = (int)lv;
        }
    }
    if (source == -2) { /* the pure engine's look-up, and its errors (shared.unlisted_move) */
        PyObject *args[2] = {DRAFT_MOVES[g->n_factories], move};
        PyObject *res = PyObject_Vectorcall(unlisted_move_fn, args, 2, NULL);
        if (!res) return NULL;
        long sv = PyLong_AsLong(PyTuple_GET_ITEM(res, 0));
        long cv = PyLong_AsLong(PyTuple_GET_ITEM(res, 1));
        long lv = PyLong_AsLong(PyTuple_GET_ITEM(res, 2));
        Py_DECREF(res);
        if (PyErr_Occurred()) return NULL;
        source = (int)sv;
        colour = (int)cv;
        line = (int)lv;
    }
    int code = decision_code(source, colour, line);
    int player = g->current_player;
    BoardS *b = &g->boards[player];
    uint8_t *acc = b->accept;
    if (line != -1 && !(acc[colour] >> line & 1))
        return illegal(PyUnicode_FromFormat("%R: line %d cannot take that colour", MOVES[code],
                                            line));
    int n, fcode = 0;
    if (source == -1) {
        n = g->centre[colour];
        if (!n) return illegal(PyUnicode_FromFormat("%R: the centre has no such tile", MOVES[code]));
    } else {
        fcode = g->factories[source];
        n = CODE_COUNTS[fcode][colour];
        if (!n)
            return illegal(PyUnicode_FromFormat("%R: that factory has no such tile", MOVES[code]));
    }
    /* Legal: from here on the position changes. */
    if (log_decision(g, player, code) < 0) return NULL;
    if (source == -1) {
        g->centre[colour] = 0;
        if (g->marker_in_centre) {
            g->marker_in_centre = 0;
            g->next_first = player;
            if (b->floor_len < FLOOR_SLOTS) b->floor[b->floor_len++] = MARKER;
        }
    } else {
        const uint8_t *counts = CODE_COUNTS[fcode];
        for (int k = 0; k < 5; k++)
            if (k != colour) g->centre[k] += counts[k];
        g->factories[source] = 0;
    }
    int table = g->table_tiles - n;
    g->table_tiles = table;
    if (line != -1) {
        int count = b->line_count[line];
        int room = line + 1 - count;
        uint8_t clear = (uint8_t)~(1 << line);
        if (n >= room) { /* the line fills up: no colour fits on it any more */
            b->line_count[line] = (uint8_t)(line + 1);
            n -= room;
            if (count) {
                acc[colour] &= clear;
            } else {
                b->line_colour[line] = (int8_t)colour;
                for (int k = 0; k < 5; k++) acc[k] &= clear;
            }
        } else {
            b->line_count[line] = (uint8_t)(count + n);
            n = 0;
            if (!count) { /* a new colour on the line: only that colour fits on it now */
                b->line_colour[line] = (int8_t)colour;
                uint8_t keep = acc[colour];
                for (int k = 0; k < 5; k++) acc[k] &= clear;
                acc[colour] = keep;
            }
        }
    }
    if (n) {
        int free = FLOOR_SLOTS - b->floor_len;
        if (n > free) {
            g->lid[colour] += n - free;
            n = free;
        }
        for (int i = 0; i < n; i++) b->floor[b->floor_len++] = (uint8_t)colour;
    }
    if (table) {
        g->current_player = player + 1 == g->n_players ? 0 : player + 1;
    } else {
        g->tiling_player = 0;
        g->tiling_line = 0;
        if (continue_tiling(g) < 0) return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ Game: queries */

static PyObject *Game_scores(GameObject *self, PyObject *unused) {
    (void)unused;
    PyObject *out = PyList_New(self->n_players);
    if (!out) return NULL;
    for (int p = 0; p < self->n_players; p++) {
        long long v = self->decision == OVER ? board_breakdown(&self->boards[p]).total
                                             : self->boards[p].score;
        PyObject *x = PyLong_FromLongLong(v);
        if (!x) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, p, x);
    }
    return out;
}

static PyObject *Game_breakdowns(GameObject *self, PyObject *unused) {
    (void)unused;
    PyObject *out = PyList_New(self->n_players);
    if (!out) return NULL;
    for (int p = 0; p < self->n_players; p++) {
        PyObject *x = breakdown_object(&self->boards[p]);
        if (!x) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, p, x);
    }
    return out;
}

static PyObject *Game_ranks(GameObject *self, PyObject *unused) {
    (void)unused;
    long long total[MAX_PLAYERS];
    int rows[MAX_PLAYERS];
    for (int p = 0; p < self->n_players; p++) {
        total[p] = board_breakdown(&self->boards[p]).total;
        rows[p] = board_full_rows(&self->boards[p]);
    }
    PyObject *out = PyList_New(self->n_players);
    if (!out) return NULL;
    for (int p = 0; p < self->n_players; p++) {
        int rank = 1;
        for (int q = 0; q < self->n_players; q++)
            if (total[q] > total[p] || (total[q] == total[p] && rows[q] > rows[p])) rank++;
        PyList_SET_ITEM(out, p, PyLong_FromLong(rank));
    }
    return out;
}

static PyObject *Game_tile_counts(GameObject *g, PyObject *unused) {
    (void)unused;
    long bag = 0, lid = 0, fac = 0, centre = 0, lines = 0, walls = 0, floors = 0;
    for (int c = 0; c < 5; c++) {
        bag += g->bag[c];
        lid += g->lid[c];
        centre += g->centre[c];
    }
    for (int f = 0; f < g->n_factories; f++) fac += CODE_TILES[g->factories[f]];
    for (int p = 0; p < g->n_players; p++) {
        BoardS *b = &g->boards[p];
        for (int i = 0; i < 5; i++) lines += b->line_count[i];
        for (int i = 0; i < 25; i++) walls += b->wall[i] != -1;
        for (int i = 0; i < b->floor_len; i++) floors += b->floor[i] != MARKER;
    }
    return Py_BuildValue("{s:l,s:l,s:l,s:l,s:l,s:l,s:l}", "bag", bag, "lid", lid, "factories", fac,
                         "centre", centre, "lines", lines, "walls", walls, "floors", floors);
}

static PyObject *code_counts_list(int code) { return list_of_uint8(CODE_COUNTS[code], 5); }

static PyObject *Game_factory_counts(GameObject *g, PyObject *unused) {
    (void)unused;
    PyObject *out = PyList_New(g->n_factories);
    if (!out) return NULL;
    for (int f = 0; f < g->n_factories; f++) {
        PyObject *x = code_counts_list(g->factories[f]);
        if (!x) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, f, x);
    }
    return out;
}

/* copy.copy() and copy.deepcopy(): a game holds no mutable Python state of its own but the
 * injected deals, which copies share as the pure engine's do. */
static PyObject *Game_dunder_copy(GameObject *self, PyObject *unused) {
    (void)unused;
    return Game_copy(self, NULL, 0, NULL);
}

static PyObject *Game_is_legal(GameObject *self, PyObject *move) {
    PyObject *moves = Game_legal_moves(self, NULL);
    if (!moves) return NULL;
    int in = PySequence_Contains(moves, move);
    Py_DECREF(moves);
    if (in < 0) return NULL;
    return PyBool_FromLong(in);
}

/* Recompute the derived table state after an edit of factories/centre (tests, from_observation). */
static PyObject *Game_sync_table(GameObject *g, PyObject *unused) {
    (void)unused;
    int t = 0;
    for (int c = 0; c < 5; c++) t += g->centre[c];
    for (int f = 0; f < g->n_factories; f++) t += CODE_TILES[g->factories[f]];
    g->table_tiles = t;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ Game: cold methods */

static PyObject *call_module(const char *module, const char *name, PyObject *const *args,
                             Py_ssize_t nargs) {
    PyObject *mod = PyImport_ImportModule(module);
    if (!mod) return NULL;
    PyObject *fn = PyObject_GetAttrString(mod, name);
    Py_DECREF(mod);
    if (!fn) return NULL;
    PyObject *out = PyObject_Vectorcall(fn, args, nargs, NULL);
    Py_DECREF(fn);
    return out;
}

static PyObject *Game_observation_dict(PyObject *self, PyObject *unused) {
    (void)unused;
    PyObject *args[1] = {self};
    return call_module("arena.engine.view", "observation_dict", args, 1);
}

/* The observation as compact JSON, written here: byte for byte
 * json.dumps(observation_dict(), separators=(",", ":")) (arena/engine/view.py owns the
 * layout; tests/engine/test_parity.py compares the two). The referee sends it with every
 * decision: building the dict and encoding it costs ~10 us, this ~1 us. */
typedef struct { char *p; } Out;

static inline void out_str(Out *o, const char *text) {
    size_t n = strlen(text);
    memcpy(o->p, text, n);
    o->p += n;
}

static inline void out_int(Out *o, long long v) {
    char digits[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do { digits[n++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) *o->p++ = '-';
    while (n) *o->p++ = digits[--n];
}

static inline void out_counts(Out *o, const int16_t *v) {
    *o->p++ = '[';
    for (int i = 0; i < N_COLOURS; i++) {
        if (i) *o->p++ = ',';
        out_int(o, v[i]);
    }
    *o->p++ = ']';
}

static const char *const DECISION_NAMES[3] = {"draft", "place", "over"};
static const char *const END_NAMES[4] = {"null", "\"normal\"", "\"round_limit\"", "\"no_tiles\""};

static PyObject *Game_observation_json(GameObject *g, PyObject *unused) {
    (void)unused;
    /* At most ~4.1 kB: 4 boards of < 700 bytes, 9 factories, 20-digit numbers. */
    char buf[8192];
    Out o = {buf};
    out_str(&o, g->gray ? "{\"variant\":\"gray\",\"n_players\":" : "{\"variant\":\"coloured\",\"n_players\":");
    out_int(&o, g->n_players);
    out_str(&o, ",\"round\":");
    out_int(&o, g->round);
    out_str(&o, ",\"round_limit\":");
    out_int(&o, g->round_limit);
    out_str(&o, ",\"decision\":\"");
    out_str(&o, DECISION_NAMES[g->decision]);
    out_str(&o, "\",\"current_player\":");
    out_int(&o, g->current_player);
    out_str(&o, ",\"first_player\":");
    out_int(&o, g->first_player);
    out_str(&o, ",\"next_first_player\":");
    out_int(&o, g->next_first);
    out_str(&o, ",\"pending_line\":");
    if (g->decision == PLACE) out_int(&o, g->tiling_line);
    else out_str(&o, "null");
    out_str(&o, ",\"factories\":[");
    for (int f = 0; f < g->n_factories; f++) {
        const uint8_t *counts = CODE_COUNTS[g->factories[f]];
        if (f) *o.p++ = ',';
        *o.p++ = '[';
        for (int c = 0; c < N_COLOURS; c++) {
            if (c) *o.p++ = ',';
            *o.p++ = (char)('0' + counts[c]);
        }
        *o.p++ = ']';
    }
    out_str(&o, "],\"centre\":");
    out_counts(&o, g->centre);
    out_str(&o, g->marker_in_centre ? ",\"marker_in_centre\":true,\"bag\":"
                                    : ",\"marker_in_centre\":false,\"bag\":");
    out_counts(&o, g->bag);
    out_str(&o, ",\"lid\":");
    out_counts(&o, g->lid);
    out_str(&o, ",\"players\":[");
    for (int seat = 0; seat < g->n_players; seat++) {
        const BoardS *b = &g->boards[seat];
        out_str(&o, seat ? ",{\"seat\":" : "{\"seat\":");
        out_int(&o, seat);
        out_str(&o, ",\"score\":");
        out_int(&o, b->score);
        out_str(&o, ",\"lines\":[");
        for (int line = 0; line < 5; line++) {
            out_str(&o, line ? ",{\"colour\":" : "{\"colour\":");
            if (b->line_count[line]) out_int(&o, b->line_colour[line]);
            else out_str(&o, "null");
            out_str(&o, ",\"count\":");
            out_int(&o, b->line_count[line]);
            *o.p++ = '}';
        }
        out_str(&o, "],\"wall\":[");
        for (int row = 0; row < 5; row++) {
            *o.p++ = row ? ',' : '[';
            if (row) *o.p++ = '[';
            for (int col = 0; col < 5; col++) {
                int cell = b->wall[row * 5 + col];
                if (col) *o.p++ = ',';
                if (cell < 0) out_str(&o, "null");
                else *o.p++ = (char)('0' + cell);
            }
            *o.p++ = ']';
        }
        out_str(&o, "],\"floor\":[");
        for (int i = 0; i < b->floor_len; i++) {
            if (i) *o.p++ = ',';
            *o.p++ = (char)('0' + b->floor[i]);
        }
        out_str(&o, "]}");
    }
    out_str(&o, "],\"end_reason\":");
    out_str(&o, END_NAMES[g->end_reason]);
    out_str(&o, ",\"colours\":[\"blue\",\"yellow\",\"red\",\"black\",\"white\"]}");
    return PyBytes_FromStringAndSize(buf, o.p - buf);
}

static PyObject *Game_observation(PyObject *self, PyObject *unused) {
    (void)unused;
    PyObject *data = Game_observation_dict(self, NULL);
    if (!data) return NULL;
    PyObject *mod = PyImport_ImportModule("arena.engine.observation");
    PyObject *out = NULL;
    if (mod) {
        PyObject *cls = PyObject_GetAttrString(mod, "Observation");
        if (cls) {
            out = PyObject_CallMethod(cls, "model_validate", "O", data);
            Py_DECREF(cls);
        }
        Py_DECREF(mod);
    }
    Py_DECREF(data);
    return out;
}

static PyObject *Game_record(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"players", NULL};
    PyObject *players = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:record", kwlist, &players)) return NULL;
    PyObject *call[2] = {self, players};
    return call_module("arena.engine.record", "build_record", call, 2);
}

static PyObject *Game_render(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"names", NULL};
    PyObject *names = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:render", kwlist, &names)) return NULL;
    PyObject *list = names == Py_None ? Py_NewRef(Py_None) : PySequence_List(names);
    if (!list) return NULL;
    PyObject *call[2] = {self, list};
    PyObject *out = call_module("arena.engine.render", "render", call, 2);
    Py_DECREF(list);
    return out;
}

static PyObject *Game_from_observation(PyObject *cls, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"view", "seed", NULL};
    PyObject *view, *seed = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:from_observation", kwlist, &view, &seed))
        return NULL;
    PyObject *call[3] = {cls, view, seed};
    return PyObject_Vectorcall(from_observation_fn, call, 3, NULL);
}

/* A tuple of ``n`` ints (NULL on failure). */
#define INT_TUPLE(NAME, TYPE)                                                              \
    static PyObject *NAME(const TYPE *v, int n) {                                         \
        PyObject *out = PyTuple_New(n);                                                    \
        if (!out) return NULL;                                                             \
        for (int i = 0; i < n; i++) {                                                      \
            PyObject *x = PyLong_FromLong((long)v[i]);                                     \
            if (!x) { Py_DECREF(out); return NULL; }                                       \
            PyTuple_SET_ITEM(out, i, x);                                                   \
        }                                                                                  \
        return out;                                                                        \
    }
INT_TUPLE(tuple_of_int8, int8_t)
INT_TUPLE(tuple_of_uint8, uint8_t)
INT_TUPLE(tuple_of_int16, int16_t)
INT_TUPLE(tuple_of_uint16, uint16_t)

/* One board in the snapshot's layout: (score, (5 line colours, 5 line counts), wall, floor). */
static PyObject *board_snapshot(const BoardS *b) {
    PyObject *out = PyTuple_New(4);
    if (!out) return NULL;
    PyObject *lines = PyTuple_New(10);
    if (!lines) goto fail;
    PyTuple_SET_ITEM(out, 1, lines);
    for (int i = 0; i < 5; i++) {
        PyObject *colour = PyLong_FromLong(b->line_colour[i]);
        if (!colour) goto fail;
        PyTuple_SET_ITEM(lines, i, colour);
        PyObject *count = PyLong_FromLong(b->line_count[i]);
        if (!count) goto fail;
        PyTuple_SET_ITEM(lines, 5 + i, count);
    }
    PyObject *score = PyLong_FromLongLong(b->score);
    if (!score) goto fail;
    PyTuple_SET_ITEM(out, 0, score);
    PyObject *wall = tuple_of_int8(b->wall, 25);
    if (!wall) goto fail;
    PyTuple_SET_ITEM(out, 2, wall);
    PyObject *floor = tuple_of_uint8(b->floor, b->floor_len);
    if (!floor) goto fail;
    PyTuple_SET_ITEM(out, 3, floor);
    return out;
fail:
    Py_DECREF(out); /* (a tuple's unset items are NULL: skipped) */
    return NULL;
}

/* The public position as plain tuples in ``arena.viewer.frames.snapshot``'s layout: a
 * replay's frames are drawn from one taken before every decision (~1.2 us here, ~4 us
 * through the attributes). */
static PyObject *Game_snapshot(GameObject *g, PyObject *unused) {
    (void)unused;
    PyObject *out = PyTuple_New(9);
    if (!out) return NULL;
    PyObject *item;
#define PUT(I, EXPR)                                                                       \
    if (!(item = (EXPR))) goto fail;                                                       \
    PyTuple_SET_ITEM(out, I, item);
    PUT(0, PyLong_FromLong(g->round));
    PUT(1, PyLong_FromLong(g->current_player));
    PUT(2, PyLong_FromLong(g->first_player));
    PUT(3, Py_NewRef(DECISION_VALUES[g->decision]));
    PUT(4, g->decision == PLACE ? PyLong_FromLong(g->tiling_line) : Py_NewRef(Py_None));
    PUT(5, tuple_of_uint16(g->factories, g->n_factories));
    PUT(6, tuple_of_int16(g->centre, 5));
    PUT(7, Py_NewRef(g->marker_in_centre ? Py_True : Py_False));
    PUT(8, PyTuple_New(g->n_players));
    for (int p = 0; p < g->n_players; p++) {
        PyObject *board = board_snapshot(&g->boards[p]);
        if (!board) goto fail;
        PyTuple_SET_ITEM(item, p, board);
    }
#undef PUT
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *Game_repr(GameObject *g) {
    PyObject *scores = Game_scores(g, NULL);
    if (!scores) return NULL;
    PyObject *variant = PyObject_GetAttrString(VARIANTS[g->gray], "value");
    PyObject *decision = PyObject_GetAttrString(DECISIONS[g->decision], "value");
    PyObject *out = NULL;
    if (variant && decision)
        out = PyUnicode_FromFormat("<Game %dp %U round %ld %U seat %d scores %R>", g->n_players,
                                   variant, g->round, decision, g->current_player, scores);
    Py_XDECREF(variant);
    Py_XDECREF(decision);
    Py_DECREF(scores);
    return out;
}

/* ------------------------------------------------------------------ Game: attributes */

#define INT_GETTER(name, expr)                                           \
    static PyObject *get_##name(GameObject *g, void *closure) {          \
        (void)closure;                                                   \
        return PyLong_FromLong((long)(expr));                            \
    }
#define INT_SETTER(name, field, lo, hi)                                  \
    static int set_##name(GameObject *g, PyObject *value, void *closure) { \
        (void)closure;                                                   \
        long v;                                                          \
        if (read_long(value, #name, lo, hi, &v) < 0) return -1;          \
        g->field = v;                                                    \
        return 0;                                                        \
    }

INT_GETTER(n_players, g->n_players)
INT_GETTER(round, g->round)
INT_SETTER(round, round, 0, LONG_MAX)
INT_GETTER(round_limit, g->round_limit)
INT_SETTER(round_limit, round_limit, 1, LONG_MAX)
INT_GETTER(current_player, g->current_player)
INT_GETTER(first_player, g->first_player)
INT_GETTER(next_first, g->next_first)
INT_GETTER(tiling_player, g->tiling_player)
INT_SETTER(tiling_player, tiling_player, 0, MAX_PLAYERS)
INT_GETTER(tiling_line, g->tiling_line)
INT_SETTER(tiling_line, tiling_line, 0, 5)
INT_GETTER(table_tiles, g->table_tiles)
INT_SETTER(table_tiles, table_tiles, 0, 1000)
INT_GETTER(deal_pos, g->deal_pos)
INT_SETTER(deal_pos, deal_pos, 0, PY_SSIZE_T_MAX)

static int set_seat(GameObject *g, PyObject *value, int *field, const char *what) {
    long v;
    if (read_long(value, what, 0, g->n_players - 1, &v) < 0) return -1;
    *field = (int)v;
    return 0;
}
static int set_current_player(GameObject *g, PyObject *v, void *c) {
    (void)c;
    return set_seat(g, v, &g->current_player, "current_player");
}
static int set_first_player(GameObject *g, PyObject *v, void *c) {
    (void)c;
    return set_seat(g, v, &g->first_player, "_first_player");
}
static int set_next_first(GameObject *g, PyObject *v, void *c) {
    (void)c;
    return set_seat(g, v, &g->next_first, "_next_first");
}

static PyObject *get_variant(GameObject *g, void *c) {
    (void)c;
    return Py_NewRef(VARIANTS[g->gray]);
}
static PyObject *get_seed(GameObject *g, void *c) {
    (void)c;
    return Py_NewRef(g->seed);
}
static PyObject *get_decision(GameObject *g, void *c) {
    (void)c;
    return Py_NewRef(DECISIONS[g->decision]);
}
static int set_decision(GameObject *g, PyObject *value, void *c) {
    (void)c;
    if (!value) { PyErr_SetString(PyExc_AttributeError, "cannot delete decision"); return -1; }
    PyObject *d = PyObject_CallOneArg(DecisionType, value);
    if (!d) return -1;
    Py_DECREF(d);
    for (int i = 0; i < 3; i++)
        if (d == DECISIONS[i]) { g->decision = i; return 0; }
    PyErr_Format(PyExc_ValueError, "%R is not a Decision", value);
    return -1;
}
static PyObject *get_end_reason(GameObject *g, void *c) {
    (void)c;
    return Py_NewRef(END_REASONS[g->end_reason]);
}
static int set_end_reason(GameObject *g, PyObject *value, void *c) {
    (void)c;
    if (!value) { PyErr_SetString(PyExc_AttributeError, "cannot delete end_reason"); return -1; }
    if (value == Py_None) { g->end_reason = END_NONE; return 0; }
    PyObject *e = PyObject_CallOneArg(EndReasonType, value);
    if (!e) return -1;
    Py_DECREF(e);
    for (int i = 1; i < 4; i++)
        if (e == END_REASONS[i]) { g->end_reason = i; return 0; }
    PyErr_Format(PyExc_ValueError, "%R is not an EndReason", value);
    return -1;
}
static PyObject *get_marker(GameObject *g, void *c) {
    (void)c;
    return PyBool_FromLong(g->marker_in_centre);
}
static int set_marker(GameObject *g, PyObject *value, void *c) {
    (void)c;
    if (!value) { PyErr_SetString(PyExc_AttributeError, "cannot delete marker_in_centre"); return -1; }
    int t = PyObject_IsTrue(value);
    if (t < 0) return -1;
    g->marker_in_centre = t;
    return 0;
}
static PyObject *get_pending_line(GameObject *g, void *c) {
    (void)c;
    if (g->decision == PLACE) return PyLong_FromLong(g->tiling_line);
    Py_RETURN_NONE;
}
static PyObject *get_rng(GameObject *g, void *c) {
    (void)c;
    return PyLong_FromUnsignedLongLong(g->rng);
}
static int set_rng(GameObject *g, PyObject *value, void *c) {
    (void)c;
    if (!value) { PyErr_SetString(PyExc_AttributeError, "cannot delete _rng"); return -1; }
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    g->rng = v;
    return 0;
}
static PyObject *get_deals(GameObject *g, void *c) {
    (void)c;
    if (g->deals) return Py_NewRef(g->deals);
    Py_RETURN_NONE;
}

#define FIVE_COUNTS(name, field, hi)                                           \
    static PyObject *get_##name(GameObject *g, void *c) {                   \
        (void)c;                                                            \
        return list_of_int16(g->field, 5);                                  \
    }                                                                       \
    static int set_##name(GameObject *g, PyObject *value, void *c) {        \
        (void)c;                                                            \
        long v[5];                                                          \
        if (read_ints(value, #name, 5, 0, hi, v) < 0) return -1;            \
        for (int i = 0; i < 5; i++) g->field[i] = (int16_t)v[i];            \
        return 0;                                                           \
    }
FIVE_COUNTS(bag, bag, 20)
FIVE_COUNTS(lid, lid, 20)
FIVE_COUNTS(centre, centre, 100)

static PyObject *get_factories(GameObject *g, void *c) {
    (void)c;
    PyObject *out = PyList_New(g->n_factories);
    if (!out) return NULL;
    for (int f = 0; f < g->n_factories; f++) {
        PyObject *x = PyLong_FromLong(g->factories[f]);
        if (!x) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, f, x);
    }
    return out;
}
static int set_factories(GameObject *g, PyObject *value, void *c) {
    (void)c;
    long v[MAX_FACTORIES];
    if (read_ints(value, "factories", g->n_factories, 0, N_CODES - 1, v) < 0) return -1;
    for (int f = 0; f < g->n_factories; f++) {
        if (CODE_TILES[v[f]] > 4) {
            PyErr_Format(PyExc_ValueError, "factories: code %ld holds more than 4 tiles", v[f]);
            return -1;
        }
    }
    for (int f = 0; f < g->n_factories; f++) g->factories[f] = (uint16_t)v[f];
    return 0;
}

static PyObject *get_place_options(GameObject *g, void *c) {
    (void)c;
    PyObject *out = PyTuple_New(POPCOUNT[g->place_mask]);
    if (!out) return NULL;
    int k = 0;
    for (int col = 0; col < 5; col++)
        if (g->place_mask >> col & 1) PyTuple_SET_ITEM(out, k++, Py_NewRef(PLACES[col]));
    return out;
}
static int set_place_options(GameObject *g, PyObject *value, void *c) {
    (void)c;
    long cols[5];
    Py_ssize_t n = read_ints(value, "_place_options", -5, 0, 4, cols);
    if (n < 0) { /* a sequence of Place: read their columns */
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
        PyErr_Clear();
        PyObject *seq = PySequence_Fast(value, "_place_options");
        if (!seq) return -1;
        n = PySequence_Fast_GET_SIZE(seq);
        if (n > 5) { Py_DECREF(seq); PyErr_SetString(PyExc_ValueError, "_place_options"); return -1; }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
            if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 1) {
                Py_DECREF(seq);
                PyErr_Format(PyExc_TypeError, "_place_options: %R is not a Place", item);
                return -1;
            }
            cols[i] = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
            if ((cols[i] == -1 && PyErr_Occurred()) || cols[i] < 0 || cols[i] > 4) {
                Py_DECREF(seq);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_place_options");
                return -1;
            }
        }
        Py_DECREF(seq);
    }
    int mask = 0;
    for (Py_ssize_t i = 0; i < n; i++) mask |= 1 << cols[i];
    g->place_mask = mask;
    return 0;
}

/* boards: views of the game's boards (fresh objects; each reads and writes the game). */
static PyObject *get_boards(GameObject *g, void *c) {
    (void)c;
    PyObject *out = PyList_New(g->n_players);
    if (!out) return NULL;
    for (int p = 0; p < g->n_players; p++) {
        BoardObject *b = PyObject_GC_New(BoardObject, &BoardType);
        if (!b) { Py_DECREF(out); return NULL; }
        b->game = (GameObject *)Py_NewRef(g);
        b->seat = p;
        PyObject_GC_Track(b);
        PyList_SET_ITEM(out, p, (PyObject *)b);
    }
    return out;
}
static int set_boards(GameObject *g, PyObject *value, void *c) {
    (void)c;
    if (!value) { PyErr_SetString(PyExc_AttributeError, "cannot delete boards"); return -1; }
    PyObject *seq = PySequence_Fast(value, "boards");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != g->n_players) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "boards: %d boards expected", g->n_players);
        return -1;
    }
    BoardS copy[MAX_PLAYERS];
    for (int p = 0; p < g->n_players; p++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, p);
        if (!PyObject_TypeCheck(item, &BoardType)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "boards: %R is not a Board", item);
            return -1;
        }
        copy[p] = *board_state((BoardObject *)item);
    }
    Py_DECREF(seq);
    memcpy(g->boards, copy, sizeof(BoardS) * (size_t)g->n_players);
    return 0;
}

/* rounds: RoundLog objects (finished rounds' cached and shared, like the pure engine's). */
static PyObject *round_log(const RoundS *r) {
    PyObject *codes = PyList_New(r->n_codes);
    if (!codes) return NULL;
    for (int i = 0; i < r->n_codes; i++) PyList_SET_ITEM(codes, i, PyLong_FromLong(r->codes[i]));
    PyObject *log = PyObject_CallFunction(RoundLogType, "liN", r->number, r->first_player, codes);
    if (!log) return NULL;
    PyObject *decisions = PyList_New(r->n_dec);
    PyObject *scores = PyList_New(r->n_scores);
    if (!decisions || !scores) goto fail;
    for (int i = 0; i < r->n_dec; i++) {
        int d = r->dec[i], code = d & 511;
        PyObject *move = code >= PLACE_BASE ? PLACES[code - PLACE_BASE] : MOVES[code];
        PyObject *pair = PyTuple_Pack(2, SMALL_INTS[d >> 9], move);
        if (!pair) goto fail;
        PyList_SET_ITEM(decisions, i, pair);
    }
    for (int i = 0; i < r->n_scores; i++) {
        PyObject *x = PyLong_FromLongLong(r->scores[i]);
        if (!x) goto fail;
        PyList_SET_ITEM(scores, i, x);
    }
    if (PyObject_SetAttrString(log, "decisions", decisions) < 0 ||
        PyObject_SetAttrString(log, "scores", scores) < 0)
        goto fail;
    Py_DECREF(decisions);
    Py_DECREF(scores);
    return log;
fail:
    Py_XDECREF(decisions);
    Py_XDECREF(scores);
    Py_DECREF(log);
    return NULL;
}

static PyObject *get_rounds(GameObject *g, void *c) {
    (void)c;
    Py_ssize_t n = g->n_hist + (g->has_round ? 1 : 0);
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    Py_ssize_t i = g->n_hist;
    for (Hist *h = g->hist; h; h = h->prev) {
        if (!h->cached && !(h->cached = round_log(&h->r))) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, --i, Py_NewRef(h->cached));
    }
    if (g->has_round) {
        if (!g->cur_log && !(g->cur_log = round_log(&g->cur))) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, n - 1, Py_NewRef(g->cur_log));
    }
    return out;
}

static int read_move_code(PyObject *move, int *code) {
    PyObject *seq = PySequence_Tuple(move);
    if (!seq) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    long v[3];
    for (Py_ssize_t i = 0; i < n && i < 3; i++) {
        v[i] = PyLong_AsLong(PyTuple_GET_ITEM(seq, i));
        if (v[i] == -1 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
    }
    Py_DECREF(seq);
    if (n == 1 && v[0] >= 0 && v[0] < 5) { *code = PLACE_BASE + (int)v[0]; return 0; }
    if (n == 3 && v[0] >= -1 && v[0] < MAX_FACTORIES && v[1] >= 0 && v[1] < 5 && v[2] >= -1 &&
        v[2] < 5) {
        *code = decision_code((int)v[0], (int)v[1], (int)v[2]);
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "rounds: %R is not a move", move);
    return -1;
}

static int read_round(PyObject *log, RoundS *r, int n_players, int n_factories) {
    PyObject *number = PyObject_GetAttrString(log, "number");
    PyObject *first = PyObject_GetAttrString(log, "first_player");
    PyObject *codes = PyObject_GetAttrString(log, "codes");
    PyObject *decisions = PyObject_GetAttrString(log, "decisions");
    PyObject *scores = PyObject_GetAttrString(log, "scores");
    PyObject *seq = NULL;
    int rc = -1;
    long v[MAX_FACTORIES], first_v;
    long long_scores[MAX_PLAYERS];
    if (!number || !first || !codes || !decisions || !scores) goto done;
    if (read_long(number, "rounds: number", 0, LONG_MAX, &r->number) < 0) goto done;
    if (read_long(first, "rounds: first_player", 0, n_players - 1, &first_v) < 0) goto done;
    r->first_player = (int)first_v;
    if (read_ints(codes, "rounds: codes", n_factories, 0, N_CODES - 1, v) < 0) goto done;
    r->n_codes = n_factories;
    for (int i = 0; i < n_factories; i++) r->codes[i] = (uint16_t)v[i];
    Py_ssize_t ns = read_ints(scores, "rounds: scores", -MAX_PLAYERS, LONG_MIN, LONG_MAX,
                              long_scores);
    if (ns < 0) goto done;
    r->n_scores = (int)ns;
    for (Py_ssize_t i = 0; i < ns; i++) r->scores[i] = long_scores[i];
    seq = PySequence_Fast(decisions, "rounds: decisions");
    if (!seq) goto done;
    Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
    if (nd > MAX_DECISIONS) {
        PyErr_Format(PyExc_ValueError, "rounds: more than %d decisions in a round", MAX_DECISIONS);
        goto done;
    }
    for (Py_ssize_t i = 0; i < nd; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        long seat;
        int code;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_ValueError, "rounds: %R is no (seat, move) pair", pair);
            goto done;
        }
        if (read_long(PyTuple_GET_ITEM(pair, 0), "rounds: seat", 0, n_players - 1, &seat) < 0 ||
            read_move_code(PyTuple_GET_ITEM(pair, 1), &code) < 0)
            goto done;
        r->dec[i] = (uint16_t)(seat << 9 | code);
    }
    r->n_dec = (int)nd;
    rc = 0;
done:
    Py_XDECREF(number);
    Py_XDECREF(first);
    Py_XDECREF(codes);
    Py_XDECREF(decisions);
    Py_XDECREF(scores);
    Py_XDECREF(seq);
    return rc;
}

static int set_rounds(GameObject *g, PyObject *value, void *c) {
    (void)c;
    if (!value) { PyErr_SetString(PyExc_AttributeError, "cannot delete rounds"); return -1; }
    PyObject *seq = PySequence_Fast(value, "rounds");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Hist *hist = NULL;
    RoundS cur;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (read_round(item, &cur, g->n_players, g->n_factories) < 0) goto fail;
        if (i < n - 1) {
            Hist *h = PyMem_Malloc(sizeof(Hist));
            if (!h) { PyErr_NoMemory(); goto fail; }
            h->refcnt = 1;
            h->prev = hist;
            h->r = cur;
            /* The same RoundLog object reads back, as from the pure engine's list. */
            h->cached = Py_NewRef(item);
            hist = h;
        }
    }
    hist_release(g->hist);
    g->hist = hist;
    g->n_hist = n > 0 ? n - 1 : 0;
    g->has_round = n > 0;
    Py_CLEAR(g->cur_log);
    if (n > 0) { /* the same RoundLog reads back, and is appended to, as the pure engine's */
        g->cur = cur;
        g->cur_log = Py_NewRef(PySequence_Fast_GET_ITEM(seq, n - 1));
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    hist_release(hist);
    return -1;
}

static PyGetSetDef Game_getset[] = {
    {"n_players", (getter)get_n_players, NULL, NULL, NULL},
    {"variant", (getter)get_variant, NULL, NULL, NULL},
    {"seed", (getter)get_seed, NULL, NULL, NULL},
    {"round_limit", (getter)get_round_limit, (setter)set_round_limit, NULL, NULL},
    {"round", (getter)get_round, (setter)set_round, "Current round, from 1.", NULL},
    {"current_player", (getter)get_current_player, (setter)set_current_player,
     "Seat that must decide now (for Decision.PLACE: whose wall).", NULL},
    {"decision", (getter)get_decision, (setter)set_decision, NULL, NULL},
    {"end_reason", (getter)get_end_reason, (setter)set_end_reason, NULL, NULL},
    {"factories", (getter)get_factories, (setter)set_factories,
     "Factory contents as codes; 0 when empty (a snapshot: assign to change).", NULL},
    {"centre", (getter)get_centre, (setter)set_centre, "Tiles in the centre, per colour.", NULL},
    {"marker_in_centre", (getter)get_marker, (setter)set_marker, NULL, NULL},
    {"bag", (getter)get_bag, (setter)set_bag, NULL, NULL},
    {"lid", (getter)get_lid, (setter)set_lid, NULL, NULL},
    {"boards", (getter)get_boards, (setter)set_boards,
     "The players' boards: views that read and write this game.", NULL},
    {"rounds", (getter)get_rounds, (setter)set_rounds, "RoundLog per round so far.", NULL},
    {"first_player", (getter)get_first_player, NULL, "First player of the current round.", NULL},
    {"next_first_player", (getter)get_next_first, NULL, "Who starts the next round.", NULL},
    {"pending_line", (getter)get_pending_line, NULL,
     "Gray wall: the pattern line whose tile awaits a column, else None.", NULL},
    {"_first_player", (getter)get_first_player, (setter)set_first_player, NULL, NULL},
    {"_next_first", (getter)get_next_first, (setter)set_next_first, NULL, NULL},
    {"_tiling_player", (getter)get_tiling_player, (setter)set_tiling_player, NULL, NULL},
    {"_tiling_line", (getter)get_tiling_line, (setter)set_tiling_line, NULL, NULL},
    {"_table_tiles", (getter)get_table_tiles, (setter)set_table_tiles, NULL, NULL},
    {"_deal_pos", (getter)get_deal_pos, (setter)set_deal_pos, NULL, NULL},
    {"_deals", (getter)get_deals, NULL, NULL, NULL},
    {"_rng", (getter)get_rng, (setter)set_rng, NULL, NULL},
    {"_place_options", (getter)get_place_options, (setter)set_place_options, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Game_methods[] = {
    {"new", (PyCFunction)(void (*)(void))Game_new, METH_FASTCALL | METH_KEYWORDS | METH_CLASS,
     "Start a game: seat 0 is the first player of round 1."},
    {"_blank", (PyCFunction)(void (*)(void))Game_blank, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "A game before its first deal (from_observation fills it in)."},
    {"from_observation", (PyCFunction)(void (*)(void))Game_from_observation,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Rebuild a game from the public view a bot receives, to simulate from it."},
    {"is_over", (PyCFunction)Game_is_over, METH_NOARGS, NULL},
    {"legal_moves", (PyCFunction)Game_legal_moves, METH_NOARGS,
     "All legal decisions for current_player, deduplicated, in a fixed order."},
    {"is_legal", (PyCFunction)Game_is_legal, METH_O, NULL},
    {"apply", (PyCFunction)Game_apply, METH_O,
     "Play move for current_player. Raises IllegalMove (and leaves the game unchanged)."},
    {"copy", (PyCFunction)(void (*)(void))Game_copy, METH_FASTCALL | METH_KEYWORDS,
     "An independent copy. With seed, future deals use a fresh generator."},
    {"__copy__", (PyCFunction)Game_dunder_copy, METH_NOARGS, NULL},
    {"__deepcopy__", (PyCFunction)Game_dunder_copy, METH_O, NULL},
    {"scores", (PyCFunction)Game_scores, METH_NOARGS, NULL},
    {"breakdowns", (PyCFunction)Game_breakdowns, METH_NOARGS, NULL},
    {"ranks", (PyCFunction)Game_ranks, METH_NOARGS, NULL},
    {"tile_counts", (PyCFunction)Game_tile_counts, METH_NOARGS, NULL},
    {"factory_counts", (PyCFunction)Game_factory_counts, METH_NOARGS, NULL},
    {"_sync_table", (PyCFunction)Game_sync_table, METH_NOARGS,
     "Recompute the derived table state after factories/centre were assigned."},
    {"observation_dict", (PyCFunction)Game_observation_dict, METH_NOARGS, NULL},
    {"observation_json", (PyCFunction)Game_observation_json, METH_NOARGS,
     "The public view as compact JSON bytes (what a bot receives as its observation)."},
    {"observation", (PyCFunction)Game_observation, METH_NOARGS, NULL},
    {"_snapshot", (PyCFunction)Game_snapshot, METH_NOARGS,
     "The public position as plain tuples (arena.viewer.frames.snapshot's layout)."},
    {"record", (PyCFunction)(void (*)(void))Game_record, METH_VARARGS | METH_KEYWORDS, NULL},
    {"render", (PyCFunction)(void (*)(void))Game_render, METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject GameType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "arena.engine.game.Game",
    .tp_doc = "A game of Azul for 2-4 players: the full state and the rules (C build).",
    .tp_basicsize = sizeof(GameObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_dealloc = (destructor)Game_dealloc,
    .tp_repr = (reprfunc)Game_repr,
    .tp_methods = Game_methods,
    .tp_getset = Game_getset,
    .tp_free = PyObject_Free,
};

/* ------------------------------------------------------------------ Board */

static PyObject *Board_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "Board() takes no arguments");
        return NULL;
    }
    BoardObject *b = (BoardObject *)type->tp_alloc(type, 0);
    if (!b) return NULL;
    b->game = NULL;
    b->seat = 0;
    board_init(&b->own);
    return (PyObject *)b;
}

/* A view keeps its game alive; on a Game subclass's __dict__ that can be a cycle: GC-aware. */
static int Board_traverse(BoardObject *b, visitproc visit, void *arg) {
    Py_VISIT(b->game);
    return 0;
}

static int Board_clear(BoardObject *b) {
    if (b->game) { /* keep reading the board: detach it with its state */
        b->own = b->game->boards[b->seat];
        Py_CLEAR(b->game);
    }
    return 0;
}

static void Board_dealloc(BoardObject *b) {
    PyObject_GC_UnTrack(b);
    Py_XDECREF(b->game);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static PyObject *Board_copy(BoardObject *self, PyObject *unused) {
    (void)unused;
    BoardObject *b = PyObject_GC_New(BoardObject, &BoardType);
    if (!b) return NULL;
    b->game = NULL;
    b->seat = 0;
    b->own = *board_state(self);
    PyObject_GC_Track(b);
    return (PyObject *)b;
}

static PyObject *Board_refresh_accept(BoardObject *self, PyObject *unused) {
    (void)unused;
    board_refresh_accept(board_state(self));
    Py_RETURN_NONE;
}

static PyObject *Board_full_rows(BoardObject *self, PyObject *unused) {
    (void)unused;
    return PyLong_FromLong(board_full_rows(board_state(self)));
}

static PyObject *Board_breakdown(BoardObject *self, PyObject *unused) {
    (void)unused;
    return breakdown_object(board_state(self));
}

static PyObject *Board_place(BoardObject *self, PyObject *args) {
    int row, col, colour;
    if (!PyArg_ParseTuple(args, "iii:place", &row, &col, &colour)) return NULL;
    if (row < 0 || row > 4 || col < 0 || col > 4 || colour < 0 || colour > 4) {
        PyErr_SetString(PyExc_IndexError, "place: row, column and colour are 0..4");
        return NULL;
    }
    return PyLong_FromLong(board_place(board_state(self), row, col, colour));
}

static PyObject *Board_gray_columns(BoardObject *self, PyObject *args) {
    int row, colour;
    if (!PyArg_ParseTuple(args, "ii:gray_columns", &row, &colour)) return NULL;
    if (row < 0 || row > 4 || colour < 0 || colour > 4) {
        PyErr_SetString(PyExc_IndexError, "gray_columns: row and colour are 0..4");
        return NULL;
    }
    BoardS *b = board_state(self);
    int mask = FULL & ~(b->row_cells[row] | b->colour_cols[colour]);
    PyObject *out = PyList_New(POPCOUNT[mask]);
    if (!out) return NULL;
    int k = 0;
    for (int c = 0; c < 5; c++)
        if (mask >> c & 1) PyList_SET_ITEM(out, k++, small_int(c));
    return out;
}

#define BOARD_LIST(name, type, lo, hi, n)                                    \
    static PyObject *bget_##name(BoardObject *self, void *c) {               \
        (void)c;                                                             \
        return list_of_##type(board_state(self)->name, n);                   \
    }                                                                        \
    static int bset_##name(BoardObject *self, PyObject *value, void *c) {    \
        (void)c;                                                             \
        long v[25];                                                          \
        if (read_ints(value, #name, n, lo, hi, v) < 0) return -1;            \
        BoardS *b = board_state(self);                                       \
        for (int i = 0; i < n; i++) b->name[i] = v[i];                       \
        return 0;                                                            \
    }
BOARD_LIST(line_colour, int8, -1, 4, 5)
BOARD_LIST(line_count, uint8, 0, 5, 5)
BOARD_LIST(accept, uint8, 0, 31, 5)
BOARD_LIST(row_cells, uint8, 0, 31, 5)
BOARD_LIST(row_colours, uint8, 0, 31, 5)
BOARD_LIST(col_rows, uint8, 0, 31, 5)
BOARD_LIST(colour_cols, uint8, 0, 31, 5)
BOARD_LIST(wall, int8, -1, 4, 25)

static PyObject *bget_floor(BoardObject *self, void *c) {
    (void)c;
    BoardS *b = board_state(self);
    return list_of_uint8(b->floor, b->floor_len);
}
static int bset_floor(BoardObject *self, PyObject *value, void *c) {
    (void)c;
    long v[FLOOR_SLOTS];
    Py_ssize_t n = read_ints(value, "floor", -FLOOR_SLOTS, 0, MARKER, v);
    if (n < 0) return -1;
    BoardS *b = board_state(self);
    for (Py_ssize_t i = 0; i < n; i++) b->floor[i] = (uint8_t)v[i];
    b->floor_len = (uint8_t)n;
    return 0;
}
static PyObject *bget_score(BoardObject *self, void *c) {
    (void)c;
    return PyLong_FromLongLong(board_state(self)->score);
}
static int bset_score(BoardObject *self, PyObject *value, void *c) {
    (void)c;
    if (!value) { PyErr_SetString(PyExc_AttributeError, "cannot delete score"); return -1; }
    long long v = PyLong_AsLongLong(value);
    if (v == -1 && PyErr_Occurred()) return -1;
    board_state(self)->score = v;
    return 0;
}

static PyGetSetDef Board_getset[] = {
    {"line_colour", (getter)bget_line_colour, (setter)bset_line_colour,
     "Colour on each pattern line, -1 when empty.", NULL},
    {"line_count", (getter)bget_line_count, (setter)bset_line_count, NULL, NULL},
    {"accept", (getter)bget_accept, (setter)bset_accept,
     "Per colour, the mask of pattern lines that can still take it.", NULL},
    {"row_cells", (getter)bget_row_cells, (setter)bset_row_cells, NULL, NULL},
    {"row_colours", (getter)bget_row_colours, (setter)bset_row_colours, NULL, NULL},
    {"col_rows", (getter)bget_col_rows, (setter)bset_col_rows, NULL, NULL},
    {"colour_cols", (getter)bget_colour_cols, (setter)bset_colour_cols, NULL, NULL},
    {"wall", (getter)bget_wall, (setter)bset_wall, "Colour of each wall cell, -1 when empty.", NULL},
    {"floor", (getter)bget_floor, (setter)bset_floor, NULL, NULL},
    {"score", (getter)bget_score, (setter)bset_score, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Board_methods[] = {
    {"copy", (PyCFunction)Board_copy, METH_NOARGS, "An independent board with the same state."},
    {"refresh_accept", (PyCFunction)Board_refresh_accept, METH_NOARGS,
     "Recompute which lines accept which colour (after lines/wall were edited)."},
    {"full_rows", (PyCFunction)Board_full_rows, METH_NOARGS, NULL},
    {"breakdown", (PyCFunction)Board_breakdown, METH_NOARGS, NULL},
    {"place", (PyCFunction)Board_place, METH_VARARGS,
     "Put a tile on the wall and return the points it scores."},
    {"gray_columns", (PyCFunction)Board_gray_columns, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BoardType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "arena.engine.game.Board",
    .tp_doc = "One player's board (C build): a view of a game's board, or a board of its own.",
    .tp_basicsize = sizeof(BoardObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Board_new,
    .tp_dealloc = (destructor)Board_dealloc,
    .tp_traverse = (traverseproc)Board_traverse,
    .tp_clear = (inquiry)Board_clear,
    .tp_free = PyObject_GC_Del,
    .tp_methods = Board_methods,
    .tp_getset = Board_getset,
};

/* ------------------------------------------------------------------ module */

static int run_through(int mask, int i) {
    if (!(mask >> i & 1)) return 0;
    int lo = i, hi = i;
    while (lo > 0 && (mask >> (lo - 1) & 1)) lo--;
    while (hi < 4 && (mask >> (hi + 1) & 1)) hi++;
    return hi - lo + 1;
}

static void build_move_texts(void);

static int build_tables(void) {
    build_move_texts();
    for (int code = 0; code < N_CODES; code++) {
        int rest = code, tiles = 0, mask = 0;
        for (int c = 0; c < 5; c++) {
            CODE_COUNTS[code][c] = (uint8_t)(rest % 5);
            tiles += rest % 5;
            if (rest % 5) mask |= 1 << c;
            rest /= 5;
        }
        CODE_TILES[code] = (uint8_t)tiles;
        CODE_MASK[code] = (uint8_t)mask;
    }
    for (int m = 0; m < 32; m++) {
        POPCOUNT[m] = (uint8_t)__builtin_popcount((unsigned)m);
        for (int i = 0; i < 5; i++) RUN[m][i] = (uint8_t)run_through(m, i);
    }
    for (int h = 0; h < 6; h++)
        for (int v = 0; v < 6; v++)
            PLACE_POINTS[h][v] =
                (uint8_t)(h <= 1 && v <= 1 ? 1 : (h > 1 ? h : 0) + (v > 1 ? v : 0));
    for (uint64_t t = 0; t <= 100; t++)
        ORDERED_DRAWS[t] = t >= 4 ? t * (t - 1) * (t - 2) * (t - 3) : 0;
    return 0;
}

static PyObject *get_attr(PyObject *mod, const char *name) {
    return PyObject_GetAttrString(mod, name);
}

static int import_python_parts(void) {
    PyObject *tables = PyImport_ImportModule("arena.engine.tables");
    if (!tables) return -1;
    PyObject *shared = PyImport_ImportModule("arena.engine.shared");
    if (!shared) { Py_DECREF(tables); return -1; }
    int rc = -1;
    PyObject *move_of = get_attr(tables, "MOVE_OF");
    PyObject *places = get_attr(tables, "PLACES");
    PyObject *draft_moves = get_attr(tables, "DRAFT_MOVES");
    if (!move_of || !places || !draft_moves) goto done;
    for (int s = -1; s < MAX_FACTORIES; s++)
        for (int c = 0; c < 5; c++)
            for (int l = -1; l < 5; l++) {
                PyObject *key = Py_BuildValue("(iii)", s, c, l);
                if (!key) goto done;
                PyObject *move = PyDict_GetItemWithError(move_of, key);
                Py_DECREF(key);
                if (!move) {
                    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ImportError, "MOVE_OF lacks a move");
                    goto done;
                }
                MOVES[decision_code(s, c, l)] = Py_NewRef(move);
            }
    for (int col = 0; col < 5; col++) {
        PyObject *p = PySequence_GetItem(places, col);
        if (!p) goto done;
        PLACES[col] = p;
    }
    for (int si = 0; si <= MAX_FACTORIES; si++)
        for (int c = 0; c < 5; c++)
            for (int m = 0; m < 32; m++) {
                int k = 0, source = si == MAX_FACTORIES ? -1 : si;
                for (int l = 0; l < 5; l++)
                    if (m >> l & 1) LINE_MOVES[si][c][m][k++] = MOVES[decision_code(source, c, l)];
                LINE_MOVES[si][c][m][k] = MOVES[decision_code(source, c, -1)];
            }
    for (int n = 5; n <= MAX_FACTORIES; n += 2) {
        PyObject *key = PyLong_FromLong(n);
        if (!key) goto done;
        PyObject *d = PyDict_GetItemWithError(draft_moves, key);
        Py_DECREF(key);
        if (!d) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ImportError, "DRAFT_MOVES lacks a game");
            goto done;
        }
        DRAFT_MOVES[n] = Py_NewRef(d);
    }
    if (!(DecisionType = get_attr(tables, "Decision")) ||
        !(EndReasonType = get_attr(tables, "EndReason")) ||
        !(VariantType = get_attr(tables, "Variant")) ||
        !(seed_state_fn = get_attr(tables, "seed_state")))
        goto done;
    if (!(DECISIONS[0] = get_attr(DecisionType, "DRAFT")) ||
        !(DECISIONS[1] = get_attr(DecisionType, "PLACE")) ||
        !(DECISIONS[2] = get_attr(DecisionType, "OVER")) ||
        !(END_REASONS[1] = get_attr(EndReasonType, "NORMAL")) ||
        !(END_REASONS[2] = get_attr(EndReasonType, "ROUND_LIMIT")) ||
        !(END_REASONS[3] = get_attr(EndReasonType, "NO_TILES")) ||
        !(VARIANTS[0] = get_attr(VariantType, "COLOURED")) ||
        !(VARIANTS[1] = get_attr(VariantType, "GRAY")))
        goto done;
    END_REASONS[0] = Py_NewRef(Py_None);
    for (int i = 0; i < 3; i++)
        if (!(DECISION_VALUES[i] = get_attr(DECISIONS[i], "value"))) goto done;
    if (!(IllegalMove = get_attr(shared, "IllegalMove")) ||
        !(IllegalDeal = get_attr(shared, "IllegalDeal")) ||
        !(BreakdownType = get_attr(shared, "Breakdown")) ||
        !(RoundLogType = get_attr(shared, "RoundLog")) ||
        !(take_deal_fn = get_attr(shared, "take_deal")) ||
        !(unlisted_move_fn = get_attr(shared, "unlisted_move")) ||
        !(from_observation_fn = get_attr(shared, "from_observation")))
        goto done;
    for (int i = 0; i < 16; i++)
        if (!(SMALL_INTS[i] = PyLong_FromLong(i))) goto done;
    rc = 0;
done:
    Py_XDECREF(move_of);
    Py_XDECREF(places);
    Py_XDECREF(draft_moves);
    Py_DECREF(tables);
    Py_DECREF(shared);
    return rc;
}

/* moves_json(): legal moves as the JSON array a bot receives as its options (game.py's
 * moves_json owns the format). Each move's text is written once, at import. */
static char MOVE_TEXT[PLACE_BASE + 5][40];
static uint8_t MOVE_TEXT_LEN[PLACE_BASE + 5];

static void build_move_texts(void) {
    for (int source = -1; source < MAX_FACTORIES; source++)
        for (int colour = 0; colour < N_COLOURS; colour++)
            for (int line = -1; line < 5; line++) {
                int code = decision_code(source, colour, line);
                MOVE_TEXT_LEN[code] = (uint8_t)snprintf(
                    MOVE_TEXT[code], sizeof MOVE_TEXT[code],
                    "{\"source\":%d,\"colour\":%d,\"line\":%d}", source, colour, line);
            }
    for (int column = 0; column < 5; column++)
        MOVE_TEXT_LEN[PLACE_BASE + column] = (uint8_t)snprintf(
            MOVE_TEXT[PLACE_BASE + column], sizeof MOVE_TEXT[0], "{\"column\":%d}", column);
}

static PyObject *moves_json(PyObject *module, PyObject *moves) {
    (void)module;
    PyObject *seq = PySequence_Fast(moves, "moves_json() takes a sequence of moves");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    char stack[4096];
    size_t need = 2 + (size_t)n * (sizeof MOVE_TEXT[0] + 1);
    char *buf = need <= sizeof stack ? stack : PyMem_Malloc(need);
    if (!buf) { Py_DECREF(seq); return PyErr_NoMemory(); }
    char *p = buf;
    *p++ = '[';
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *m = items[i];
        long a, b, c;
        int code = -1;
        Py_ssize_t size = PyTuple_Check(m) ? PyTuple_GET_SIZE(m) : 0;
        if (size == 3 && small_long(PyTuple_GET_ITEM(m, 0), &a) && a >= -1 && a < MAX_FACTORIES &&
            small_long(PyTuple_GET_ITEM(m, 1), &b) && b >= 0 && b < N_COLOURS &&
            small_long(PyTuple_GET_ITEM(m, 2), &c) && c >= -1 && c < 5)
            code = decision_code((int)a, (int)b, (int)c);
        else if (size == 1 && small_long(PyTuple_GET_ITEM(m, 0), &a) && a >= 0 && a < 5)
            code = PLACE_BASE + (int)a;
        if (code < 0) {
            PyErr_Format(PyExc_ValueError, "not a move: %R", m);
            if (buf != stack) PyMem_Free(buf);
            Py_DECREF(seq);
            return NULL;
        }
        if (i) *p++ = ',';
        memcpy(p, MOVE_TEXT[code], sizeof MOVE_TEXT[0]); /* fixed size: one inlined copy */
        p += MOVE_TEXT_LEN[code];
    }
    *p++ = ']';
    PyObject *out = PyBytes_FromStringAndSize(buf, p - buf);
    if (buf != stack) PyMem_Free(buf);
    Py_DECREF(seq);
    return out;
}

/* _encode_deltas(taken, lines_drawn, factory_text, letters, cells, floor_items): the frames
 * after the first of ``arena.viewer.frames.encode_frames`` (which owns the format and keeps
 * the Python loop this repeats, for the pure engine): per snapshot after the first, what
 * changed from the one before, drawn. ``lines_drawn``: each seat's pattern lines as last
 * drawn (updated here); the texts' letters come from the caller. ~0.3 us a position where
 * the Python loop takes ~4 (and a worker draws ~50 a game after it played them, caches
 * cold). */
static PyObject *KEY_R, *KEY_CP, *KEY_FP, *KEY_D, *KEY_PL, *KEY_F, *KEY_C, *KEY_M, *KEY_P,
    *KEY_S, *KEY_L, *KEY_W, *SMALL_KEYS[16];

static int intern_frame_keys(void) {
    if (KEY_R) return 0;
    const char *names[] = {"r", "cp", "fp", "d", "pl", "f", "c", "m", "p", "s", "l", "w"};
    PyObject **slots[] = {&KEY_R, &KEY_CP, &KEY_FP, &KEY_D, &KEY_PL, &KEY_F,
                          &KEY_C, &KEY_M,  &KEY_P,  &KEY_S, &KEY_L,  &KEY_W};
    for (int i = 0; i < 12; i++)
        if (!(*slots[i] = PyUnicode_InternFromString(names[i]))) return -1;
    for (int i = 0; i < 16; i++)
        if (!(SMALL_KEYS[i] = PyUnicode_FromFormat("%d", i))) return -1;
    return 0;
}


/* -1: an error is set; 0: equal; 1: different. Snapshots are tuples of small ints (one
 * object per value): compared item by item here, ~5x faster than tuple comparison. */
static int differ(PyObject *a, PyObject *b) {
    if (a == b) return 0;
    if (PyLong_CheckExact(a) && PyLong_CheckExact(b)) {
        int overflow_a, overflow_b;
        long x = PyLong_AsLongAndOverflow(a, &overflow_a);
        long y = PyLong_AsLongAndOverflow(b, &overflow_b);
        if (!overflow_a && !overflow_b) return x != y;
    } else if (PyTuple_CheckExact(a) && PyTuple_CheckExact(b)) {
        Py_ssize_t n = PyTuple_GET_SIZE(a);
        if (n != PyTuple_GET_SIZE(b)) return 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            int d = differ(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i));
            if (d) return d;
        }
        return 0;
    }
    int eq = PyObject_RichCompareBool(a, b, Py_EQ);
    return eq < 0 ? -1 : !eq;
}

/* ``text[v + shift]`` for each small int of ``items`` (a tuple) as one str; NULL on error. */
static PyObject *items_text(PyObject *items, const char *text, Py_ssize_t text_len, int shift,
                            const char *what) {
    Py_ssize_t n = PyTuple_Check(items) ? PyTuple_GET_SIZE(items) : -1;
    if (n < 0 || n > 256) return PyErr_Format(PyExc_ValueError, "not a snapshot's %s", what);
    char buf[256];
    for (Py_ssize_t i = 0; i < n; i++) {
        long v = PyLong_AsLong(PyTuple_GET_ITEM(items, i)) + shift;
        if (v < 0 || v >= text_len) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "not a snapshot's %s", what);
            return NULL;
        }
        buf[i] = text[v];
    }
    return PyUnicode_FromStringAndSize(buf, n);
}

/* A centre's counts (a 5-tuple) as ``tiles_text`` draws them: each letter repeated. */
static PyObject *counts_text(PyObject *counts, const char *letters) {
    if (!PyTuple_Check(counts) || PyTuple_GET_SIZE(counts) != 5)
        return PyErr_Format(PyExc_ValueError, "not a snapshot's centre");
    char buf[512];
    Py_ssize_t len = 0;
    for (int c = 0; c < 5; c++) {
        long k = PyLong_AsLong(PyTuple_GET_ITEM(counts, c));
        if (k < 0 || len + k > (Py_ssize_t)sizeof buf) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "not a snapshot's centre");
            return NULL;
        }
        memset(buf + len, letters[c], (size_t)k);
        len += k;
    }
    return PyUnicode_FromStringAndSize(buf, len);
}

/* Pattern lines (5 colours, then 5 counts) as five strs: a colour's letter per tile. */
static PyObject *lines_text(PyObject *lines, const char *letters) {
    if (!PyTuple_Check(lines) || PyTuple_GET_SIZE(lines) != 10)
        return PyErr_Format(PyExc_ValueError, "not a snapshot's pattern lines");
    PyObject *out = PyList_New(5);
    if (!out) return NULL;
    for (int i = 0; i < 5; i++) {
        long count = PyLong_AsLong(PyTuple_GET_ITEM(lines, 5 + i));
        long colour = count ? PyLong_AsLong(PyTuple_GET_ITEM(lines, i)) : 0;
        if (count < 0 || count > 5 || colour < 0 || colour > 4) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "not a snapshot's pattern lines");
            Py_DECREF(out);
            return NULL;
        }
        char buf[5];
        memset(buf, letters[colour], (size_t)count);
        PyObject *text = PyUnicode_FromStringAndSize(buf, count);
        if (!text) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, text);
    }
    return out;
}

/* Set ``d[key] = value`` and drop the reference to ``value``; -1 on error. */
static int put(PyObject *d, PyObject *key, PyObject *value) {
    if (!value) return -1;
    int rc = PyDict_SetItem(d, key, value);
    Py_DECREF(value);
    return rc;
}

/* Set ``d[str(i)] = value`` and drop the reference to ``value``; -1 on error. */
static int put_at(PyObject *d, Py_ssize_t i, PyObject *value) {
    if (!value) return -1;
    PyObject *key = i < 16 ? Py_NewRef(SMALL_KEYS[i]) : PyUnicode_FromFormat("%zd", i);
    int rc = key ? PyDict_SetItem(d, key, value) : -1;
    Py_XDECREF(key);
    Py_DECREF(value);
    return rc;
}

/* One board's changes (score, lines, wall, floor); NULL on error, an empty dict if none. */
static PyObject *board_delta(PyObject *a, PyObject *b, PyObject *lines_drawn, Py_ssize_t seat,
                             const char *letters, const char *cells, Py_ssize_t cells_len,
                             const char *floor_items, Py_ssize_t floor_len) {
    if (!PyTuple_Check(a) || !PyTuple_Check(b) || PyTuple_GET_SIZE(a) != 4 ||
        PyTuple_GET_SIZE(b) != 4)
        return PyErr_Format(PyExc_ValueError, "not a snapshot's board");
    PyObject *changed = PyDict_New();
    if (!changed) return NULL;
    int d;
    if ((d = differ(PyTuple_GET_ITEM(a, 0), PyTuple_GET_ITEM(b, 0))) < 0) goto fail;
    if (d && PyDict_SetItem(changed, KEY_S, PyTuple_GET_ITEM(b, 0)) < 0) goto fail;
    if ((d = differ(PyTuple_GET_ITEM(a, 1), PyTuple_GET_ITEM(b, 1))) < 0) goto fail;
    if (d) {
        PyObject *text = lines_text(PyTuple_GET_ITEM(b, 1), letters);
        if (!text) goto fail;
        PyObject *drawn = PyList_GET_ITEM(lines_drawn, seat);
        int new = differ(drawn, text);
        if (new < 0 || (new && (PyList_SetItem(lines_drawn, seat, Py_NewRef(text)) < 0 ||
                                PyDict_SetItem(changed, KEY_L, text) < 0))) {
            Py_DECREF(text);
            goto fail;
        }
        Py_DECREF(text);
    }
    if ((d = differ(PyTuple_GET_ITEM(a, 2), PyTuple_GET_ITEM(b, 2))) < 0) goto fail;
    if (d && put(changed, KEY_W, items_text(PyTuple_GET_ITEM(b, 2), cells, cells_len, 1, "wall")) < 0)
        goto fail;
    if ((d = differ(PyTuple_GET_ITEM(a, 3), PyTuple_GET_ITEM(b, 3))) < 0) goto fail;
    if (d && put(changed, KEY_F,
                 items_text(PyTuple_GET_ITEM(b, 3), floor_items, floor_len, 0, "floor")) < 0)
        goto fail;
    return changed;
fail:
    Py_DECREF(changed);
    return NULL;
}

static PyObject *encode_deltas(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    const char *letters, *cells, *floor_items;
    Py_ssize_t letters_len, cells_len, floor_len;
    if (nargs != 6 || !PyList_Check(args[0]) || !PyList_Check(args[1]) ||
        !PyList_Check(args[2]) || !(letters = PyUnicode_AsUTF8AndSize(args[3], &letters_len)) ||
        !(cells = PyUnicode_AsUTF8AndSize(args[4], &cells_len)) ||
        !(floor_items = PyUnicode_AsUTF8AndSize(args[5], &floor_len)) || letters_len != 5) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError,
                            "_encode_deltas(taken, lines_drawn, factory_text, letters, cells, "
                            "floor_items)");
        return NULL;
    }
    if (intern_frame_keys() < 0) return NULL;
    PyObject *taken = args[0], *lines_drawn = args[1], *factory_text = args[2];
    Py_ssize_t n = PyList_GET_SIZE(taken), texts = PyList_GET_SIZE(factory_text);
    PyObject *frames = PyList_New(0);
    if (!frames || n == 0) return frames;
    PyObject *out = NULL;
    PyObject *before = PyList_GET_ITEM(taken, 0);
    for (Py_ssize_t k = 1; k < n; k++) {
        PyObject *after = PyList_GET_ITEM(taken, k);
        if (!PyTuple_Check(before) || !PyTuple_Check(after) || PyTuple_GET_SIZE(before) != 9 ||
            PyTuple_GET_SIZE(after) != 9) {
            PyErr_SetString(PyExc_ValueError, "not a snapshot");
            goto fail;
        }
        if (!(out = PyDict_New())) goto fail;
        PyObject *plain[] = {KEY_R, KEY_CP, KEY_FP, KEY_D, KEY_PL};
        for (int i = 0; i < 5; i++) {
            int d = differ(PyTuple_GET_ITEM(before, i), PyTuple_GET_ITEM(after, i));
            if (d < 0 || (d && PyDict_SetItem(out, plain[i], PyTuple_GET_ITEM(after, i)) < 0))
                goto fail;
        }
        PyObject *fa = PyTuple_GET_ITEM(before, 5), *fb = PyTuple_GET_ITEM(after, 5);
        int d = differ(fa, fb);
        if (d < 0) goto fail;
        if (d) {
            if (!PyTuple_Check(fa) || !PyTuple_Check(fb) ||
                PyTuple_GET_SIZE(fa) != PyTuple_GET_SIZE(fb)) {
                PyErr_SetString(PyExc_ValueError, "not a snapshot's factories");
                goto fail;
            }
            PyObject *changed = PyDict_New();
            if (!changed) goto fail;
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fa); i++) {
                long ca = PyLong_AsLong(PyTuple_GET_ITEM(fa, i));
                long cb = PyLong_AsLong(PyTuple_GET_ITEM(fb, i));
                if (ca == cb) continue;
                if (ca < 0 || cb < 0 || ca >= texts || cb >= texts) {
                    if (!PyErr_Occurred())
                        PyErr_SetString(PyExc_ValueError, "not a factory code");
                    Py_DECREF(changed);
                    goto fail;
                }
                PyObject *text = PyList_GET_ITEM(factory_text, cb);
                int drawn_differ = differ(PyList_GET_ITEM(factory_text, ca), text);
                if (drawn_differ < 0 ||
                    (drawn_differ && put_at(changed, i, Py_NewRef(text)) < 0)) {
                    Py_DECREF(changed);
                    goto fail;
                }
            }
            if (PyDict_GET_SIZE(changed) ? put(out, KEY_F, changed) < 0
                                         : (Py_DECREF(changed), 0))
                goto fail;
        }
        if ((d = differ(PyTuple_GET_ITEM(before, 6), PyTuple_GET_ITEM(after, 6))) < 0) goto fail;
        if (d && put(out, KEY_C, counts_text(PyTuple_GET_ITEM(after, 6), letters)) < 0) goto fail;
        if ((d = differ(PyTuple_GET_ITEM(before, 7), PyTuple_GET_ITEM(after, 7))) < 0) goto fail;
        if (d && PyDict_SetItem(out, KEY_M, PyTuple_GET_ITEM(after, 7)) < 0) goto fail;
        PyObject *ba = PyTuple_GET_ITEM(before, 8), *bb = PyTuple_GET_ITEM(after, 8);
        if ((d = differ(ba, bb)) < 0) goto fail;
        if (d) {
            Py_ssize_t seats = PyTuple_Check(ba) ? PyTuple_GET_SIZE(ba) : -1;
            if (seats < 0 || !PyTuple_Check(bb) || PyTuple_GET_SIZE(bb) != seats ||
                PyList_GET_SIZE(lines_drawn) < seats) {
                PyErr_SetString(PyExc_ValueError, "not a snapshot's boards");
                goto fail;
            }
            PyObject *players = PyDict_New();
            if (!players) goto fail;
            for (Py_ssize_t seat = 0; seat < seats; seat++) {
                PyObject *a = PyTuple_GET_ITEM(ba, seat), *b = PyTuple_GET_ITEM(bb, seat);
                int bd = differ(a, b);
                if (bd == 0) continue;
                PyObject *changed = bd < 0 ? NULL
                                           : board_delta(a, b, lines_drawn, seat, letters, cells,
                                                         cells_len, floor_items, floor_len);
                if (!changed) { Py_DECREF(players); goto fail; }
                if (PyDict_GET_SIZE(changed) ? put_at(players, seat, changed) < 0
                                             : (Py_DECREF(changed), 0)) {
                    Py_DECREF(players);
                    goto fail;
                }
            }
            if (PyDict_GET_SIZE(players) ? put(out, KEY_P, players) < 0
                                         : (Py_DECREF(players), 0))
                goto fail;
        }
        if (PyList_Append(frames, out) < 0) goto fail;
        Py_CLEAR(out);
        before = after;
    }
    return frames;
fail:
    Py_XDECREF(out);
    Py_DECREF(frames);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"moves_json", (PyCFunction)moves_json, METH_O,
     "Moves as the JSON array a bot receives as its options."},
    {"_encode_deltas", (PyCFunction)(void (*)(void))encode_deltas, METH_FASTCALL,
     "The frames after the first of arena.viewer.frames.encode_frames."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef game_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "arena.engine.game",
    .m_doc = "The Azul rules engine, compiled (C extension): the same games as game.py.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit_game(void) {
    if (build_tables() < 0 || import_python_parts() < 0) return NULL;
    if (PyType_Ready(&GameType) < 0 || PyType_Ready(&BoardType) < 0) return NULL;
    PyObject *m = PyModule_Create(&game_module);
    if (!m) return NULL;
    PyObject *shared = PyImport_ImportModule("arena.engine.shared");
    if (!shared) { Py_DECREF(m); return NULL; }
    PyObject *deal = PyObject_GetAttrString(shared, "Deal");
    Py_DECREF(shared);
    if (!deal || PyModule_AddObjectRef(m, "Game", (PyObject *)&GameType) < 0 ||
        PyModule_AddObjectRef(m, "Board", (PyObject *)&BoardType) < 0 ||
        PyModule_AddObjectRef(m, "IllegalMove", IllegalMove) < 0 ||
        PyModule_AddObjectRef(m, "IllegalDeal", IllegalDeal) < 0 ||
        PyModule_AddObjectRef(m, "Breakdown", BreakdownType) < 0 ||
        PyModule_AddObjectRef(m, "RoundLog", RoundLogType) < 0 ||
        PyModule_AddObjectRef(m, "Deal", deal) < 0) {
        Py_XDECREF(deal);
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(deal);
    return m;
}
