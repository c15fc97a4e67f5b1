/*
 * c-mcts: a Monte Carlo tree search Azul Arena bot (protocol v1) in C11.
 *
 * Build: gcc -O2 -std=c11 -o bot bot.c -lm     Run: ./bot [--think-ms N] [--iterations N] [--seed N]
 *
 * How it plays (see README.md for the details and the measured strength):
 *   - Within a round Azul is deterministic (the bag is only drawn between rounds),
 *     so the search tree covers the rest of the current round exactly: every
 *     player's draft moves, max^n style (each node keeps the reward of the
 *     player who moved into it), 2 to 4 players.
 *   - Leaves are the end of the round: every wall is tiled and scored, floors are
 *     charged, end-of-game bonuses are added when the game ends, and a small
 *     heuristic values what is left on the boards. The reward of a player is
 *     0.5 + 0.5 tanh((own value - best other value) / 10).
 *   - UCT with progressive widening: children are sorted by a one-ply heuristic
 *     (the c-greedy idea) and only the best sqrt(visits)+2 are searched at first;
 *     rollouts to the end of the round follow the same heuristic, with noise.
 *   - Gray wall `place` decisions: an exhaustive search over this round's
 *     remaining column choices (as in c-greedy), scored with adjacency,
 *     openness and blocked pattern lines.
 *   - Time (see think_budget): at most 30% of `time_left_ms` (the referee's number
 *     for this request) and never closer than 150 ms to it, scaled down by the CPU
 *     share the bot got recently (a loaded machine also delays answers), capped by
 *     --think-ms (default 1000); with a time bank at most half a fair share of it.
 *     Below 5 ms of budget it answers the heuristic move at once. The clock is
 *     checked every 16 iterations.
 *   - Deterministic given a seed: the random generator is seeded from --seed,
 *     the game id and the request id. With --iterations N the search stops
 *     after N iterations (if the clock allows), so a decision is then a pure
 *     function of the position and the seed.
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NAME "c-mcts"
#define PROTOCOL 1

/* ====================================================================== JSON */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } JType;

typedef struct {
    JType type;
    const char *key; /* member name (raw, unescaped bytes) when in an object */
    int keylen;
    const char *str; /* raw string contents (escapes left as they are) */
    int slen;
    double num;
    long long inum; /* numbers that are integers */
    int boolean;
    int first, next; /* first child, next sibling: node indices or -1 */
    int count;       /* number of children */
} JNode;

static JNode *nodes;
static int n_nodes, cap_nodes;
static const char *jp; /* parse cursor */
static const char *jend;

static int new_node(JType type) {
    if (n_nodes == cap_nodes) {
        cap_nodes = cap_nodes ? cap_nodes * 2 : 1024;
        JNode *grown = realloc(nodes, (size_t)cap_nodes * sizeof *nodes);
        if (!grown) return -1;
        nodes = grown;
    }
    JNode *n = &nodes[n_nodes];
    memset(n, 0, sizeof *n);
    n->type = type;
    n->first = n->next = -1;
    return n_nodes++;
}

static void skip_ws(void) {
    while (jp < jend && (*jp == ' ' || *jp == '\t' || *jp == '\n' || *jp == '\r')) jp++;
}

/* Scan a string starting at the opening quote; set *s and *len to its raw contents. */
static int scan_string(const char **s, int *len) {
    if (jp >= jend || *jp != '"') return 0;
    jp++;
    const char *start = jp;
    while (jp < jend && *jp != '"') {
        if (*jp == '\\') jp++; /* skip the escaped char (\uXXXX digits are harmless) */
        jp++;
    }
    if (jp >= jend) return 0;
    *s = start;
    *len = (int)(jp - start);
    jp++;
    return 1;
}

static int parse_value(int depth);

static int parse_container(int node, int is_obj, int depth) {
    char close = is_obj ? '}' : ']';
    int last = -1;
    jp++; /* past '{' or '[' */
    skip_ws();
    if (jp < jend && *jp == close) {
        jp++;
        return node;
    }
    for (;;) {
        const char *key = NULL;
        int keylen = 0;
        skip_ws();
        if (is_obj) {
            if (!scan_string(&key, &keylen)) return -1;
            skip_ws();
            if (jp >= jend || *jp != ':') return -1;
            jp++;
        }
        int child = parse_value(depth + 1);
        if (child < 0) return -1;
        nodes[child].key = key;
        nodes[child].keylen = keylen;
        if (last < 0)
            nodes[node].first = child;
        else
            nodes[last].next = child;
        last = child;
        nodes[node].count++;
        skip_ws();
        if (jp < jend && *jp == ',') {
            jp++;
            continue;
        }
        if (jp < jend && *jp == close) {
            jp++;
            return node;
        }
        return -1;
    }
}

static int parse_value(int depth) {
    if (depth > 64) return -1;
    skip_ws();
    if (jp >= jend) return -1;
    char c = *jp;
    int node;
    if (c == '{' || c == '[') {
        node = new_node(c == '{' ? J_OBJ : J_ARR);
        if (node < 0) return -1;
        return parse_container(node, c == '{', depth);
    }
    if (c == '"') {
        node = new_node(J_STR);
        if (node < 0) return -1;
        const char *s;
        int len;
        if (!scan_string(&s, &len)) return -1;
        nodes[node].str = s;
        nodes[node].slen = len;
        return node;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        node = new_node(J_NUM);
        if (node < 0) return -1;
        char *end;
        double v = strtod(jp, &end);
        if (end == jp) return -1;
        nodes[node].num = v;
        nodes[node].inum = (v >= -9e18 && v <= 9e18) ? (long long)v : 0;
        /* exact for integers that do not fit a double */
        const char *q = jp + (*jp == '-');
        while (q < end && *q >= '0' && *q <= '9') q++;
        if (q == end) nodes[node].inum = strtoll(jp, NULL, 10);
        jp = end;
        return node;
    }
    if (jend - jp >= 4 && strncmp(jp, "true", 4) == 0) {
        node = new_node(J_BOOL);
        if (node >= 0) nodes[node].boolean = 1;
        jp += 4;
        return node;
    }
    if (jend - jp >= 5 && strncmp(jp, "false", 5) == 0) {
        node = new_node(J_BOOL);
        jp += 5;
        return node;
    }
    if (jend - jp >= 4 && strncmp(jp, "null", 4) == 0) {
        node = new_node(J_NULL);
        jp += 4;
        return node;
    }
    return -1;
}

/* Parse one line; returns the root node index or -1. */
static int json_parse(const char *text, size_t len) {
    n_nodes = 0;
    jp = text;
    jend = text + len;
    int root = parse_value(0);
    if (root < 0) return -1;
    skip_ws();
    return jp == jend ? root : -1;
}

/* Member `key` of object node `obj`, or -1. */
static int jget(int obj, const char *key) {
    if (obj < 0 || nodes[obj].type != J_OBJ) return -1;
    int keylen = (int)strlen(key);
    for (int c = nodes[obj].first; c >= 0; c = nodes[c].next)
        if (nodes[c].keylen == keylen && memcmp(nodes[c].key, key, (size_t)keylen) == 0) return c;
    return -1;
}

/* Element `i` of array node `arr`, or -1. */
static int jat(int arr, int i) {
    if (arr < 0 || nodes[arr].type != J_ARR) return -1;
    int c = nodes[arr].first;
    while (c >= 0 && i-- > 0) c = nodes[c].next;
    return c;
}

static int jlen(int arr) { return (arr >= 0 && nodes[arr].type == J_ARR) ? nodes[arr].count : 0; }

static int jis_int(int node) { return node >= 0 && nodes[node].type == J_NUM; }

/* Integer value of a node; `dflt` when it is not a number. */
static long long jint(int node, long long dflt) { return jis_int(node) ? nodes[node].inum : dflt; }

static int jstr_eq(int node, const char *s) {
    return node >= 0 && nodes[node].type == J_STR && nodes[node].slen == (int)strlen(s) &&
           memcmp(nodes[node].str, s, strlen(s)) == 0;
}

/* ==================================================================== state */

#define EMPTY (-1)
#define MAX_MOVES 320   /* (9 factories * 4 colours + 5 centre colours) * 6 destinations < 320 */
#define MAX_OPTIONS 512 /* at the root: as many options as the referee sends (capped) */

typedef struct {
    int8_t wall[5][5];      /* colour 0..4 or EMPTY */
    int8_t line_colour[5];  /* EMPTY when the line is empty */
    int8_t line_count[5];
    int8_t floor_n;         /* floor items (marker included); the penalty caps at 7 */
    int16_t score;
} Board;

typedef struct {
    Board b[4];
    int8_t fac[9][5];
    int8_t centre[5];
    int8_t n_players, n_fac, gray, cur, marker_in_centre;
    int16_t tiles_left; /* tiles on factories and in the centre: 0 = the round's drafting is over */
} State;

typedef struct {
    int8_t src, colour, line; /* src -1 = centre; line -1 = floor */
} Move;

static const int FLOOR_PENALTY[8] = {0, 1, 2, 4, 6, 8, 11, 14};

static int floor_cost(int items) { return FLOOR_PENALTY[items > 7 ? 7 : items]; }

/* ------------------------------------------------------------- random numbers */

static uint64_t rng_state;

static uint64_t rng_next(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(void) { return (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0); }

static uint64_t hash_bytes(uint64_t h, const char *s, int len) { /* FNV-1a */
    for (int i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001B3ull;
    return h;
}

/* ------------------------------------------------------------------- the wall */

/* Fill cols[] with the legal columns of `colour` in `row`; return how many. */
static int legal_columns(const int8_t wall[5][5], int row, int colour, int gray, int cols[5]) {
    if (!gray) {
        int col = (row + colour) % 5; /* coloured wall: cell (r, c) has colour (c - r) mod 5 */
        if (wall[row][col] != EMPTY) return 0;
        cols[0] = col;
        return 1;
    }
    for (int c = 0; c < 5; c++)
        if (wall[row][c] == colour) return 0;
    int n = 0;
    for (int c = 0; c < 5; c++) {
        if (wall[row][c] != EMPTY) continue;
        int ok = 1;
        for (int r = 0; r < 5; r++)
            if (wall[r][c] == colour) ok = 0;
        if (ok) cols[n++] = c;
    }
    return n;
}

/* The row already holds the colour: a pattern line of that row cannot take it. */
static int row_has_colour(const int8_t wall[5][5], int row, int colour, int gray) {
    if (!gray) return wall[row][(row + colour) % 5] != EMPTY;
    for (int c = 0; c < 5; c++)
        if (wall[row][c] == colour) return 1;
    return 0;
}

/* Placement score of a tile on the empty cell (row, col): the rules' adjacency count. */
static int adjacency(const int8_t wall[5][5], int row, int col, int *h_out, int *v_out) {
    int h = 1, v = 1;
    for (int c = col - 1; c >= 0 && wall[row][c] != EMPTY; c--) h++;
    for (int c = col + 1; c < 5 && wall[row][c] != EMPTY; c++) h++;
    for (int r = row - 1; r >= 0 && wall[r][col] != EMPTY; r--) v++;
    for (int r = row + 1; r < 5 && wall[r][col] != EMPTY; r++) v++;
    if (h_out) *h_out = h;
    if (v_out) *v_out = v;
    return (h == 1 && v == 1) ? 1 : (h > 1 ? h : 0) + (v > 1 ? v : 0);
}

/* Heuristic worth of a tile there: adjacency plus the end bonuses it completes. */
static int tile_value(const int8_t wall[5][5], int row, int col, int colour) {
    int h, v, points = adjacency(wall, row, col, &h, &v), same = 0;
    if (h == 5) points += 2;
    if (v == 5) points += 7;
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 5; c++) same += wall[r][c] == colour;
    if (same == 4) points += 10;
    return points;
}

/* Column the search tiles a full line to (gray: the best-valued one); -1 if none. */
static int pick_column(const int8_t wall[5][5], int row, int colour, int gray) {
    int cols[5], n = legal_columns(wall, row, colour, gray, cols), best = -1, best_v = -1;
    for (int i = 0; i < n; i++) {
        int v = tile_value(wall, row, cols[i], colour);
        if (v > best_v) {
            best_v = v;
            best = cols[i];
        }
    }
    return best;
}

/* ------------------------------------------------------------------- drafting */

static int gen_moves(const State *s, Move *out) {
    const Board *b = &s->b[s->cur];
    int n = 0;
    for (int src = 0; src <= s->n_fac; src++) {
        const int8_t *tiles = src < s->n_fac ? s->fac[src] : s->centre;
        for (int c = 0; c < 5; c++) {
            if (tiles[c] <= 0) continue;
            int8_t source = (int8_t)(src < s->n_fac ? src : -1);
            for (int line = 0; line < 5; line++) {
                int count = b->line_count[line];
                if (count >= line + 1) continue;
                if (count > 0 && b->line_colour[line] != c) continue;
                if (row_has_colour(b->wall, line, c, s->gray)) continue;
                out[n++] = (Move){source, (int8_t)c, (int8_t)line};
            }
            out[n++] = (Move){source, (int8_t)c, -1};
        }
    }
    return n;
}

static void apply_move(State *s, Move m) {
    Board *b = &s->b[s->cur];
    int n;
    if (m.src < 0) {
        n = s->centre[m.colour];
        s->centre[m.colour] = 0;
        if (s->marker_in_centre) {
            s->marker_in_centre = 0;
            b->floor_n++;
        }
    } else {
        int8_t *f = s->fac[m.src];
        n = f[m.colour];
        for (int c = 0; c < 5; c++)
            if (c != m.colour) s->centre[c] = (int8_t)(s->centre[c] + f[c]);
        memset(f, 0, 5);
    }
    s->tiles_left = (int16_t)(s->tiles_left - n);
    if (m.line < 0) {
        b->floor_n = (int8_t)(b->floor_n + n);
    } else {
        int room = m.line + 1 - b->line_count[m.line];
        int placed = n < room ? n : room;
        b->line_count[m.line] = (int8_t)(b->line_count[m.line] + placed);
        b->line_colour[m.line] = m.colour;
        b->floor_n = (int8_t)(b->floor_n + n - placed);
    }
    if (b->floor_n > 40) b->floor_n = 40;
    s->cur = (int8_t)((s->cur + 1) % s->n_players);
}

/* One-ply value of a move for the player to move (the c-greedy idea, simplified). */
static double move_value(const State *s, Move m) {
    const Board *b = &s->b[s->cur];
    int n = m.src < 0 ? s->centre[m.colour] : s->fac[m.src][m.colour];
    int marker = m.src < 0 && s->marker_in_centre;
    int fl = b->floor_n;
    double v = -0.2 * marker;
    if (m.line < 0) return v - (floor_cost(fl + marker + n) - floor_cost(fl)) - 0.5;
    int cap = m.line + 1, have = b->line_count[m.line];
    int placed = n < cap - have ? n : cap - have, over = n - placed, filled = have + placed;
    int col = pick_column(b->wall, m.line, m.colour, s->gray);
    if (col < 0) return v - (floor_cost(fl + marker + n) - floor_cost(fl)) - 1.0;
    double payoff = tile_value(b->wall, m.line, col, m.colour) + 1.0;
    if (filled == cap)
        v += payoff * (1.0 - 0.8 * have / cap) + 0.3;
    else
        v += payoff * 0.8 * placed / cap - 0.15 * (cap - filled);
    return v - (floor_cost(fl + marker + over) - floor_cost(fl));
}

/* ------------------------------------------------------- end of round: leaves */

/* Tile every full line top to bottom, charge the floor. */
static void tile_board(Board *b, int gray) {
    for (int r = 0; r < 5; r++) {
        if (b->line_count[r] != r + 1) continue;
        int colour = b->line_colour[r], col = pick_column(b->wall, r, colour, gray);
        if (col < 0) {
            b->floor_n = (int8_t)(b->floor_n + b->line_count[r]);
        } else {
            b->score = (int16_t)(b->score + adjacency(b->wall, r, col, NULL, NULL));
            b->wall[r][col] = (int8_t)colour;
        }
        b->line_count[r] = 0;
        b->line_colour[r] = EMPTY;
    }
    int score = b->score - floor_cost(b->floor_n);
    b->score = (int16_t)(score < 0 ? 0 : score);
    b->floor_n = 0;
}

static int full_rows(const int8_t wall[5][5]) {
    int rows = 0;
    for (int r = 0; r < 5; r++) {
        int n = 0;
        for (int c = 0; c < 5; c++) n += wall[r][c] != EMPTY;
        rows += n == 5;
    }
    return rows;
}

/* End-of-game bonuses (exact) when `final`, else their promise: bonus * (filled / 5)^2.
 * (Full weight beat half weight by +112 Elo, 95% CI 55..177, in an `arena sprt` of 128 games.) */
static double bonus_value(const Board *b, int final) {
    int rows[5] = {0}, cols[5] = {0}, colours[5] = {0};
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 5; c++)
            if (b->wall[r][c] != EMPTY) {
                rows[r]++;
                cols[c]++;
                colours[b->wall[r][c]]++;
            }
    double v = 0;
    for (int i = 0; i < 5; i++) {
        if (final) {
            v += 2 * (rows[i] == 5) + 7 * (cols[i] == 5) + 10 * (colours[i] == 5);
        } else {
            v += 1.0 * (2.0 * rows[i] * rows[i] + 7.0 * cols[i] * cols[i] +
                        10.0 * colours[i] * colours[i]) / 25.0;
        }
    }
    if (!final) /* tiles waiting on pattern lines are worth a little */
        for (int r = 0; r < 5; r++) v += 0.4 * b->line_count[r];
    return v;
}

/* Tile the round's end on a copy and give every player a reward in [0, 1]. */
static void evaluate(const State *leaf, double reward[4]) {
    State s = *leaf;
    int over = 0;
    for (int p = 0; p < s.n_players; p++) {
        tile_board(&s.b[p], s.gray);
        if (full_rows(s.b[p].wall) > 0) over = 1;
    }
    double value[4];
    for (int p = 0; p < s.n_players; p++) value[p] = s.b[p].score + bonus_value(&s.b[p], over);
    for (int p = 0; p < s.n_players; p++) {
        double best_other = -1e9;
        for (int q = 0; q < s.n_players; q++)
            if (q != p && value[q] > best_other) best_other = value[q];
        reward[p] = 0.5 + 0.5 * tanh((value[p] - best_other) / 10.0);
    }
}

/* Rollout policy: the heuristic's best move, or now and then one of its top three. */
static Move rollout_move(const State *s) {
    Move moves[MAX_MOVES];
    int n = gen_moves(s, moves);
    int top[3] = {0, 0, 0};
    double tv[3] = {-1e18, -1e18, -1e18};
    for (int i = 0; i < n; i++) {
        double v = move_value(s, moves[i]);
        if (v > tv[0]) {
            tv[2] = tv[1], top[2] = top[1], tv[1] = tv[0], top[1] = top[0];
            tv[0] = v, top[0] = i;
        } else if (v > tv[1]) {
            tv[2] = tv[1], top[2] = top[1];
            tv[1] = v, top[1] = i;
        } else if (v > tv[2]) {
            tv[2] = v, top[2] = i;
        }
    }
    if (n > 1 && rng_unit() < 0.3) {
        int k = n < 3 ? n : 3;
        return moves[top[rng_next() % (uint64_t)k]];
    }
    return moves[top[0]];
}

/* ===================================================================== search */

typedef struct {
    int32_t first;      /* first child in the pool; -1 = not expanded yet */
    int16_t n_children; /* sorted by the heuristic, best first */
    Move move;          /* the move that led here */
    int8_t mover;       /* the seat that played it */
    uint32_t visits;
    float total;        /* sum of the mover's rewards */
} Node;

#define POOL_NODES (1 << 21) /* 2M nodes, about 40 MB */

static Node *pool;
static int pool_used;

typedef struct {
    Move move;
    double value;
    int option; /* root only: index into the referee's options */
} Ranked;

static int by_value_desc(const void *a, const void *b) {
    double va = ((const Ranked *)a)->value, vb = ((const Ranked *)b)->value;
    if (va > vb) return -1;
    if (va < vb) return 1;
    return ((const Ranked *)a)->option - ((const Ranked *)b)->option; /* stable: deterministic */
}

/* Create the children of `node` (moves from state `s`), best heuristic first. */
static int expand(int node, const State *s, const Move *moves, int n, int *options) {
    if (n <= 0 || pool_used + n > POOL_NODES) return 0;
    static Ranked ranked[MAX_OPTIONS];
    for (int i = 0; i < n; i++) {
        ranked[i].move = moves[i];
        ranked[i].value = move_value(s, moves[i]);
        ranked[i].option = i;
    }
    qsort(ranked, (size_t)n, sizeof ranked[0], by_value_desc);
    pool[node].first = pool_used;
    pool[node].n_children = (int16_t)n;
    for (int i = 0; i < n; i++) {
        Node *c = &pool[pool_used++];
        c->first = -1;
        c->n_children = 0;
        c->move = ranked[i].move;
        c->mover = s->cur;
        c->visits = 0;
        c->total = 0;
        if (options) options[i] = ranked[i].option;
    }
    return 1;
}

#define UCT_C 0.6

static int select_child(int node) {
    const Node *p = &pool[node];
    int allowed = 2 + (int)sqrt((double)p->visits); /* progressive widening */
    if (allowed > p->n_children) allowed = p->n_children;
    double log_n = log((double)p->visits + 1.0), best_v = -1e18;
    int best = p->first;
    for (int i = 0; i < allowed; i++) {
        const Node *c = &pool[p->first + i];
        if (c->visits == 0) return p->first + i;
        double v = c->total / c->visits + UCT_C * sqrt(log_n / c->visits);
        if (v > best_v) {
            best_v = v;
            best = p->first + i;
        }
    }
    return best;
}

/* Share of the CPU this process got while searching (an average over recent
 * decisions): on a loaded machine the bot gets less, and answers wait longer
 * to be scheduled, so it thinks proportionally less. */
static double cpu_share = 1.0;

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* One search iteration from the root state. */
static void iterate(const State *root) {
    State s = *root;
    int path[256], depth = 0, node = 0;
    path[depth++] = node;
    while (s.tiles_left > 0) {
        if (pool[node].first < 0) {
            if (pool[node].visits == 0 && node != 0) break; /* first visit: roll out */
            Move moves[MAX_MOVES];
            int n = gen_moves(&s, moves);
            if (!expand(node, &s, moves, n, NULL)) break; /* pool full: roll out */
        }
        node = select_child(node);
        apply_move(&s, pool[node].move);
        if (depth < 256) path[depth++] = node;
        if (pool[node].visits == 0) break;
    }
    while (s.tiles_left > 0) apply_move(&s, rollout_move(&s));
    double reward[4];
    evaluate(&s, reward);
    for (int i = 0; i < depth; i++) {
        Node *n = &pool[path[i]];
        n->visits++;
        if (i > 0) n->total += (float)reward[n->mover];
    }
}

typedef struct {
    int iterations;
    double elapsed_ms;
} SearchStats;

/* Search within budget_ms (and max_iterations if > 0); return the chosen option index. */
static int search(const State *root, const Move *options, int n_options, double t0,
                  double budget_ms, long max_iterations, SearchStats *stats) {
    static int option_of[MAX_OPTIONS];
    pool_used = 1;
    pool[0] = (Node){-1, 0, {0, 0, 0}, -1, 0, 0};
    expand(0, root, options, n_options, option_of);
    int it = 0;
    double wall0 = now_ms(), cpu0 = cpu_ms();
    if (n_options > 1 && budget_ms > 0) {
        for (;;) {
            iterate(root);
            it++;
            if (max_iterations > 0 && it >= max_iterations) break;
            if ((it & 15) == 0 && now_ms() - t0 >= budget_ms) break;
        }
    }
    double wall = now_ms() - wall0, cpu = cpu_ms() - cpu0;
    if (wall >= 5.0) { /* enough to measure: update the average CPU share */
        double share = cpu / wall > 1.0 ? 1.0 : cpu / wall;
        cpu_share = 0.7 * cpu_share + 0.3 * share;
    }
    const Node *r = &pool[0];
    int best = 0;
    for (int i = 1; i < r->n_children; i++) {
        const Node *a = &pool[r->first + i], *b = &pool[r->first + best];
        if (a->visits > b->visits ||
            (a->visits == b->visits && a->visits > 0 && a->total / a->visits > b->total / b->visits))
            best = i;
    }
    stats->iterations = it;
    stats->elapsed_ms = now_ms() - t0;
    return option_of[best];
}

/* ================================================================= gray: place */

/* A little credit for every (row, colour) that still has a legal column. */
static double openness(const int8_t wall[5][5]) {
    int open = 0, cols[5];
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 5; c++) open += legal_columns(wall, r, c, 1, cols) > 0;
    return 0.05 * open;
}

/* Best total for tiling the full lines rows[k..n) (colours[]) in order, gray wall. */
static double place_search(int8_t wall[5][5], const int *rows, const int *colours, int n, int k,
                           int floor_len) {
    if (k == n) return openness(wall) - floor_cost(floor_len);
    int cols[5], nc = legal_columns(wall, rows[k], colours[k], 1, cols);
    if (nc == 0) return place_search(wall, rows, colours, n, k + 1, floor_len + rows[k] + 1);
    double best = -1e18;
    for (int i = 0; i < nc; i++) {
        int pts = tile_value(wall, rows[k], cols[i], colours[k]);
        wall[rows[k]][cols[i]] = (int8_t)colours[k];
        double v = pts + place_search(wall, rows, colours, n, k + 1, floor_len);
        wall[rows[k]][cols[i]] = EMPTY;
        if (v > best) best = v;
    }
    return best;
}

/* Column for the pending full line: exhaustive over this round's remaining choices. */
static int choose_place(const State *s, int seat, int row, const int *columns, int n) {
    const Board *me = &s->b[seat];
    if (row < 0 || row > 4) return 0;
    int colour = me->line_colour[row];
    if (colour < 0 || colour > 4) return 0;
    int rows[5], colours[5], k = 0;
    for (int i = row + 1; i < 5; i++)
        if (me->line_count[i] == i + 1 && me->line_colour[i] >= 0) {
            rows[k] = i;
            colours[k++] = me->line_colour[i];
        }
    int8_t wall[5][5];
    memcpy(wall, me->wall, sizeof wall);
    int best_i = 0;
    double best_v = -1e18;
    for (int i = 0; i < n; i++) {
        int col = columns[i];
        if (col < 0 || col > 4 || wall[row][col] != EMPTY) continue;
        int pts = tile_value(wall, row, col, colour);
        wall[row][col] = (int8_t)colour;
        int blocked = 0, cols[5];
        for (int j = 0; j < 5; j++)
            if (me->line_count[j] > 0 && me->line_count[j] < j + 1 &&
                legal_columns(wall, j, me->line_colour[j], 1, cols) == 0)
                blocked++;
        double v = pts + place_search(wall, rows, colours, k, 0, me->floor_n) - 2.0 * blocked;
        wall[row][col] = EMPTY;
        if (v > best_v + 1e-9) {
            best_v = v;
            best_i = i;
        }
    }
    return best_i;
}

/* ============================================================ reading messages */

static int read_state(int o, State *s) {
    memset(s, 0, sizeof *s);
    if (o < 0 || nodes[o].type != J_OBJ) return 0;
    s->gray = jstr_eq(jget(o, "variant"), "gray");
    int m = jget(o, "marker_in_centre");
    s->marker_in_centre = m >= 0 && nodes[m].type == J_BOOL && nodes[m].boolean;
    int fs = jget(o, "factories");
    s->n_fac = (int8_t)(jlen(fs) > 9 ? 9 : jlen(fs));
    int total = 0;
    for (int f = 0; f < s->n_fac; f++)
        for (int c = 0; c < 5; c++) {
            int v = (int)jint(jat(jat(fs, f), c), 0);
            s->fac[f][c] = (int8_t)(v < 0 ? 0 : v > 100 ? 100 : v);
            total += s->fac[f][c];
        }
    int centre = jget(o, "centre");
    for (int c = 0; c < 5; c++) {
        int v = (int)jint(jat(centre, c), 0);
        s->centre[c] = (int8_t)(v < 0 ? 0 : v > 100 ? 100 : v);
        total += s->centre[c];
    }
    s->tiles_left = (int16_t)total;
    int ps = jget(o, "players");
    s->n_players = (int8_t)(jlen(ps) > 4 ? 4 : jlen(ps));
    if (s->n_players < 1) return 0;
    s->cur = (int8_t)jint(jget(o, "current_player"), 0);
    if (s->cur < 0 || s->cur >= s->n_players) return 0;
    for (int p = 0; p < s->n_players; p++) {
        int pj = jat(ps, p);
        Board *b = &s->b[p];
        long long score = jint(jget(pj, "score"), 0);
        b->score = (int16_t)(score < 0 ? 0 : score > 30000 ? 30000 : score);
        int fl = jlen(jget(pj, "floor"));
        b->floor_n = (int8_t)(fl > 40 ? 40 : fl);
        int lines = jget(pj, "lines");
        for (int i = 0; i < 5; i++) {
            int line = jat(lines, i);
            long long count = jint(jget(line, "count"), 0), colour = jint(jget(line, "colour"), EMPTY);
            if (count < 0 || count > i + 1 || colour < 0 || colour > 4) count = 0;
            b->line_count[i] = (int8_t)count;
            b->line_colour[i] = (int8_t)(count ? colour : EMPTY);
        }
        int wall = jget(pj, "wall");
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 5; c++) {
                long long v = jint(jat(jat(wall, r), c), EMPTY);
                b->wall[r][c] = (int8_t)(v < 0 || v > 4 ? EMPTY : v);
            }
    }
    return 1;
}

/* ============================================================== time control */

typedef struct {
    double think_cap_ms;  /* --think-ms */
    long iterations;      /* --iterations (0 = until the time budget) */
    uint64_t seed;        /* --seed */
    long long move_ms;    /* hello: move_ms, the cap of time_left_ms */
    long long bank_ms;    /* hello: time_bank_ms, -1 = no bank */
    long long increment_ms;
    double bank_left_ms;  /* our own estimate of this game's bank */
    uint64_t game_hash;
    double last_exact_bank; /* the previous decision's time_left_ms when it was the bank, or -1 */
    double last_elapsed;    /* our own measure of the previous decision */
    double overhead_ms;     /* referee-measured minus our own time per decision (average) */
} Config;

static Config cfg = {1000.0, 0, 1, 1000, -1, 0, 0, 0, -1, 0, 5.0};

#define THINK_SHARE 0.30  /* of time_left_ms */
#define MARGIN_MS 150.0   /* never think closer than this to time_left_ms */
#define BANK_SHARE 0.5    /* with a bank: half of a fair share, the rest is reserve */
#define MIN_SEARCH_MS 5.0

/* Decisions still to come for us this game: about five per round. */
static double decisions_left(const State *s) {
    int most = 0;
    for (int p = 0; p < s->n_players; p++)
        for (int r = 0; r < 5; r++) {
            int n = 0;
            for (int c = 0; c < 5; c++) n += s->b[p].wall[r][c] != EMPTY;
            if (n > most) most = n;
        }
    int rounds_after = 4 - most; /* a row needs 5 tiles; at most one more per round */
    if (rounds_after < 0) rounds_after = 0;
    double this_round = s->tiles_left / (2.0 * s->n_players) + 1.0;
    double left = 5.0 * rounds_after + this_round;
    return left < 4.0 ? 4.0 : left;
}

static double think_budget(const State *s, long long time_left_ms) {
    double t = (double)time_left_ms, load = cpu_share < 0.25 ? 0.25 : cpu_share;
    double budget = THINK_SHARE * t * load;
    if (budget > t - MARGIN_MS) budget = t - MARGIN_MS;
    if (budget > cfg.think_cap_ms) budget = cfg.think_cap_ms;
    if (cfg.bank_ms >= 0) {
        /* keep what the remaining decisions will lose to pipes and scheduling, plus 50 ms */
        double left = decisions_left(s);
        double usable = cfg.bank_left_ms - left * cfg.overhead_ms - 50.0;
        double share = BANK_SHARE * usable / left;
        if (budget > share) budget = share;
    }
    return budget < 0 ? 0 : budget;
}

/* =================================================================== decide */

static int choose(int msg, double t0) {
    static Move options[MAX_OPTIONS];
    static int columns[MAX_OPTIONS];
    static State state;
    int opts = jget(msg, "options");
    int n = jlen(opts);
    if (n <= 1) return 0;
    if (n > MAX_OPTIONS) n = MAX_OPTIONS;
    int seat = (int)jint(jget(msg, "seat"), -1);
    if (!read_state(jget(msg, "observation"), &state) || seat < 0 || seat >= state.n_players) {
        fprintf(stderr, NAME ": unreadable observation, playing option 0\n");
        return 0;
    }
    int c = nodes[opts].first;
    for (int i = 0; i < n; i++, c = nodes[c].next) {
        long long src = jint(jget(c, "source"), -2), colour = jint(jget(c, "colour"), -1),
                  line = jint(jget(c, "line"), -2);
        options[i].src = (int8_t)(src < -1 || src >= state.n_fac ? -1 : src);
        options[i].colour = (int8_t)(colour < 0 || colour > 4 ? 0 : colour);
        options[i].line = (int8_t)(line < -1 || line > 4 ? -1 : line);
        columns[i] = (int)jint(jget(c, "column"), -1);
    }
    if (jstr_eq(jget(msg, "decision"), "place")) {
        int row = (int)jint(jget(jget(msg, "observation"), "pending_line"), -1);
        return choose_place(&state, seat, row, columns, n);
    }
    state.cur = (int8_t)seat;
    long long time_left = jint(jget(msg, "time_left_ms"), 1000);
    double budget = think_budget(&state, time_left);
    long long id = jint(jget(msg, "id"), 0);
    rng_state = cfg.seed ^ cfg.game_hash ^ ((uint64_t)id * 0x9E3779B97F4A7C15ull);
    SearchStats stats = {0, 0};
    int index = search(&state, options, n, t0, budget >= MIN_SEARCH_MS ? budget : 0,
                       cfg.iterations, &stats);
    fprintf(stderr,
            NAME ": request %lld: %d options, %d iterations in %.1f ms (budget %.0f, cpu %.2f, "
                 "overhead %.0f)\n",
            id, n, stats.iterations, stats.elapsed_ms, budget, cpu_share, cfg.overhead_ms);
    return index;
}

/* ============================================================== message loop */

/* Read one line of any length (without the '\n'); returns its length, -1 at EOF. */
static long read_line(char **buf, size_t *cap) {
    size_t len = 0;
    int ch;
    while ((ch = getchar()) != EOF) {
        if (len + 1 >= *cap) {
            size_t grown_cap = *cap ? *cap * 2 : 65536;
            char *grown = realloc(*buf, grown_cap);
            if (!grown) return -1;
            *buf = grown;
            *cap = grown_cap;
        }
        if (ch == '\n') break;
        (*buf)[len++] = (char)ch;
    }
    if (ch == EOF && len == 0) return -1;
    (*buf)[len] = '\0';
    return (long)len;
}

static int parse_args(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value) break;
        if (strcmp(argv[i], "--think-ms") == 0)
            cfg.think_cap_ms = atof(value);
        else if (strcmp(argv[i], "--iterations") == 0)
            cfg.iterations = atol(value);
        else if (strcmp(argv[i], "--seed") == 0)
            cfg.seed = strtoull(value, NULL, 10);
        else {
            fprintf(stderr, NAME ": unknown argument %s\n", argv[i]);
            return 0;
        }
        i++;
    }
    return 1;
}

int main(int argc, char **argv) {
    char *buf = NULL;
    size_t cap = 0;
    long len;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!parse_args(argc, argv)) return 2;
    pool = malloc((size_t)POOL_NODES * sizeof *pool);
    if (!pool) {
        fprintf(stderr, NAME ": out of memory\n");
        return 1;
    }
    while ((len = read_line(&buf, &cap)) >= 0) {
        double t0 = now_ms();
        int msg = json_parse(buf, (size_t)len);
        if (msg < 0 || nodes[msg].type != J_OBJ) {
            if (len > 0) fprintf(stderr, NAME ": ignoring a line that is not a JSON object\n");
            continue;
        }
        int type = jget(msg, "type");
        if (jstr_eq(type, "hello")) {
            int limits = jget(msg, "limits");
            cfg.bank_ms = jis_int(jget(limits, "time_bank_ms")) ? jint(jget(limits, "time_bank_ms"), -1) : -1;
            cfg.increment_ms = jint(jget(limits, "increment_ms"), 0);
            cfg.move_ms = jint(jget(limits, "move_ms"), 1000);
            printf("{\"type\":\"ready\",\"protocol\":%d,\"name\":\"%s\",\"version\":\"1\"}\n",
                   PROTOCOL, NAME);
            fflush(stdout);
        } else if (jstr_eq(type, "game_start")) {
            int g = jget(msg, "game_id");
            cfg.game_hash = g >= 0 && nodes[g].type == J_STR
                                ? hash_bytes(0xCBF29CE484222325ull, nodes[g].str, nodes[g].slen)
                                : 0;
            cfg.bank_left_ms = (double)cfg.bank_ms;
            cfg.last_exact_bank = -1;
        } else if (jstr_eq(type, "decide")) {
            int id = jget(msg, "id");
            if (!jis_int(id)) {
                fprintf(stderr, NAME ": decide without an id\n");
                continue;
            }
            long long time_left = jint(jget(msg, "time_left_ms"), 1000);
            if (cfg.bank_ms >= 0 && time_left < cfg.move_ms) { /* below the cap it is the bank */
                cfg.bank_left_ms = (double)time_left;
                if (cfg.last_exact_bank >= 0) { /* what the referee charged for the last one */
                    double charged = cfg.last_exact_bank - (double)time_left + (double)cfg.increment_ms;
                    double over = charged - cfg.last_elapsed;
                    cfg.overhead_ms = 0.7 * cfg.overhead_ms + 0.3 * (over < 0 ? 0 : over);
                }
                cfg.last_exact_bank = (double)time_left;
            } else {
                cfg.last_exact_bank = -1;
            }
            int index = choose(msg, t0);
            printf("{\"type\":\"move\",\"id\":%lld,\"index\":%d}\n", nodes[id].inum, index);
            fflush(stdout);
            cfg.last_elapsed = now_ms() - t0;
            if (cfg.bank_ms >= 0)
                cfg.bank_left_ms += cfg.increment_ms - cfg.last_elapsed - cfg.overhead_ms;
        } else if (jstr_eq(type, "quit")) {
            break;
        }
        /* game_end and unknown types need no answer */
    }
    free(buf);
    free(nodes);
    free(pool);
    return 0;
}
