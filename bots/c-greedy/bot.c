/*
 * c-greedy: a one-ply heuristic Azul Arena bot (protocol v1) in C11.
 *
 * Build: gcc -O2 -std=c11 -o bot bot.c      Run: ./bot
 *
 * Reads one JSON message per line on stdin, writes one JSON line per answer
 * on stdout (flushed), logs to stderr. The heuristic is the same as
 * bots/python-greedy (see its README): every option is scored by its immediate
 * effect on the bot's own board and the best one is played.
 *
 * Layout of this file:
 *   1. a tiny, general JSON parser (a DOM of nodes in one growable array);
 *      it accepts any field order and ignores what it is not asked about;
 *   2. the observation in C structs, filled from the DOM;
 *   3. the heuristic (choose_draft / choose_place)  <- put your logic here;
 *   4. the message loop.
 */
#define _POSIX_C_SOURCE 200809L /* getline() */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "c-greedy"
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
        /* An integer of up to 18 digits (every number the protocol sends) is read here:
         * strtod would be most of a request's parse time. */
        const char *d = jp + (*jp == '-');
        long long acc = 0;
        int digits = 0;
        while (d < jend && *d >= '0' && *d <= '9' && digits < 18) acc = acc * 10 + (*d++ - '0'), digits++;
        if (digits && (d == jend || (*d != '.' && *d != 'e' && *d != 'E' && (*d < '0' || *d > '9')))) {
            nodes[node].inum = *jp == '-' ? -acc : acc;
            nodes[node].num = (double)nodes[node].inum;
            jp = d;
            return node;
        }
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

/* =============================================================== observation */

#define EMPTY (-1)
#define MAX_OPTIONS 512
#define EPS 1e-9 /* values closer than this are a tie: the first option wins */

typedef struct {
    int wall[5][5];      /* colour 0..4 or EMPTY */
    int line_colour[5];  /* EMPTY when the line is empty */
    int line_count[5];
    int floor_len;       /* items on the floor, the marker included */
    int score;
} Player;

typedef struct {
    int gray;
    int n_players;
    int n_factories;
    int factories[9][5];
    int centre[5];
    int marker_in_centre;
    int pending_line;
    Player players[4];
} Obs;

typedef struct {
    int source, colour, line; /* draft */
    int column;               /* place */
} Option;

static int read_obs(int o, Obs *obs) {
    memset(obs, 0, sizeof *obs);
    if (o < 0 || nodes[o].type != J_OBJ) return 0;
    obs->gray = jstr_eq(jget(o, "variant"), "gray");
    obs->pending_line = (int)jint(jget(o, "pending_line"), -1);
    int m = jget(o, "marker_in_centre");
    obs->marker_in_centre = m >= 0 && nodes[m].type == J_BOOL && nodes[m].boolean;
    int fs = jget(o, "factories");
    obs->n_factories = jlen(fs) > 9 ? 9 : jlen(fs);
    for (int f = 0; f < obs->n_factories; f++)
        for (int c = 0; c < 5; c++) obs->factories[f][c] = (int)jint(jat(jat(fs, f), c), 0);
    int centre = jget(o, "centre");
    for (int c = 0; c < 5; c++) obs->centre[c] = (int)jint(jat(centre, c), 0);
    int ps = jget(o, "players");
    obs->n_players = jlen(ps) > 4 ? 4 : jlen(ps);
    if (obs->n_players < 1) return 0;
    for (int s = 0; s < obs->n_players; s++) {
        int p = jat(ps, s);
        Player *pl = &obs->players[s];
        pl->score = (int)jint(jget(p, "score"), 0);
        pl->floor_len = jlen(jget(p, "floor"));
        int lines = jget(p, "lines");
        for (int i = 0; i < 5; i++) {
            int line = jat(lines, i);
            pl->line_count[i] = (int)jint(jget(line, "count"), 0);
            pl->line_colour[i] = (int)jint(jget(line, "colour"), EMPTY);
            if (pl->line_count[i] == 0) pl->line_colour[i] = EMPTY;
        }
        int wall = jget(p, "wall");
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 5; c++) pl->wall[r][c] = (int)jint(jat(jat(wall, r), c), EMPTY);
    }
    return 1;
}

/* ================================================================= heuristic */

static const int FLOOR_PENALTY[8] = {0, 1, 2, 4, 6, 8, 11, 14};

static int floor_cost(int items) { return FLOOR_PENALTY[items > 7 ? 7 : items]; }

/* Fill cols[] with the legal columns of `colour` in `row`; return how many. */
static int legal_columns(int wall[5][5], int row, int colour, int gray, int cols[5]) {
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

/* Points for a tile on (row, col): adjacency plus the end bonuses it completes. */
static int tile_points(int wall[5][5], int row, int col, int colour) {
    int h = 1, v = 1;
    for (int c = col - 1; c >= 0 && wall[row][c] != EMPTY; c--) h++;
    for (int c = col + 1; c < 5 && wall[row][c] != EMPTY; c++) h++;
    for (int r = row - 1; r >= 0 && wall[r][col] != EMPTY; r--) v++;
    for (int r = row + 1; r < 5 && wall[r][col] != EMPTY; r++) v++;
    int points = (h == 1 && v == 1) ? 1 : (h > 1 ? h : 0) + (v > 1 ? v : 0);
    if (h == 5) points += 2;
    if (v == 5) points += 7;
    int same = 0;
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 5; c++) same += wall[r][c] == colour;
    if (same == 4) points += 10;
    return points;
}

/* Best legal column: returns its points and sets *col, or returns -1 if none. */
static int best_column(int wall[5][5], int row, int colour, int gray, int *col) {
    int cols[5], n = legal_columns(wall, row, colour, gray, cols), best = -1;
    for (int i = 0; i < n; i++) {
        int pts = tile_points(wall, row, cols[i], colour);
        if (pts > best) {
            best = pts;
            *col = cols[i];
        }
    }
    return best;
}

/* The wall after this round's tiling of the lines that are already full. */
static void projected_wall(const Player *p, int gray, int wall[5][5]) {
    memcpy(wall, p->wall, sizeof p->wall);
    for (int i = 0; i < 5; i++) {
        int colour = p->line_colour[i], col;
        if (p->line_count[i] == i + 1 && colour >= 0 && colour < 5 &&
            best_column(wall, i, colour, gray, &col) >= 0)
            wall[i][col] = colour;
    }
}

static int rows_filled(int wall[5][5]) {
    int most = 0;
    for (int r = 0; r < 5; r++) {
        int n = 0;
        for (int c = 0; c < 5; c++) n += wall[r][c] != EMPTY;
        if (n > most) most = n;
    }
    return most;
}

typedef struct {
    int gray, last_round;
    double partial;
    int table[5];
    int wall[5][5];
} Ctx;

static double draft_value(const Option *opt, const Obs *obs, const Player *me, Ctx *ctx) {
    int n, marker = 0, colour = opt->colour, line = opt->line;
    if (colour < 0 || colour > 4) return -1e9;
    if (opt->source < 0) {
        n = obs->centre[colour];
        marker = obs->marker_in_centre ? 1 : 0;
    } else {
        if (opt->source >= obs->n_factories) return -1e9;
        n = obs->factories[opt->source][colour];
    }
    int floor_now = me->floor_len;
    double value = -0.2 * marker;
    if (line < 0 || line > 4)
        return value - (floor_cost(floor_now + marker + n) - floor_cost(floor_now)) - 0.5;

    int cap = line + 1, have = me->line_count[line];
    int placed = n < cap - have ? n : cap - have;
    if (placed < 0) placed = 0;
    int overflow = n - placed, filled = have + placed, col;
    int best = best_column(ctx->wall, line, colour, ctx->gray, &col);
    if (best < 0) /* gray wall: no column left for this colour in this row */
        return value - (floor_cost(floor_now + marker + n) - floor_cost(floor_now)) - 1.0;
    double payoff = best + 1.0;
    if (filled == cap) {
        value += payoff * (1.0 - ctx->partial * have / cap) + 0.3;
    } else {
        int remaining = cap - filled;
        double factor = ctx->partial;
        if (ctx->last_round) factor = (ctx->table[colour] - n >= remaining) ? 0.45 : 0.0;
        value += payoff * factor * placed / cap;
        value -= 0.15 * remaining;
    }
    value -= floor_cost(floor_now + marker + overflow) - floor_cost(floor_now);
    return value;
}

static int choose_draft(const Option *opts, int n_opts, const Obs *obs, int seat) {
    const Player *me = &obs->players[seat];
    Ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.gray = obs->gray;
    projected_wall(me, ctx.gray, ctx.wall);
    int most = 0;
    for (int s = 0; s < obs->n_players; s++) {
        int w[5][5];
        projected_wall(&obs->players[s], ctx.gray, w);
        int f = rows_filled(w);
        if (f > most) most = f;
        if (f == 5) ctx.last_round = 1;
    }
    ctx.partial = most <= 3 ? 0.8 : 0.55;
    for (int c = 0; c < 5; c++) {
        ctx.table[c] = obs->centre[c];
        for (int f = 0; f < obs->n_factories; f++) ctx.table[c] += obs->factories[f][c];
    }
    int best_i = 0;
    double best_v = -INFINITY;
    for (int i = 0; i < n_opts; i++) {
        double v = draft_value(&opts[i], obs, me, &ctx);
        if (v > best_v + EPS) {
            best_v = v;
            best_i = i;
        }
    }
    return best_i;
}

/* A little credit for every (row, colour) that still has a legal column. */
static double openness(int wall[5][5]) {
    int open = 0, cols[5];
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 5; c++) open += legal_columns(wall, r, c, 1, cols) > 0;
    return 0.05 * open;
}

/* Best total for tiling the full lines rows[k..n) (colours[]) in order, gray wall. */
static double place_search(int wall[5][5], const int *rows, const int *colours, int n, int k,
                           int floor_len) {
    if (k == n) return openness(wall) - floor_cost(floor_len);
    int cols[5], nc = legal_columns(wall, rows[k], colours[k], 1, cols);
    if (nc == 0) return place_search(wall, rows, colours, n, k + 1, floor_len + rows[k] + 1);
    double best = -INFINITY;
    for (int i = 0; i < nc; i++) {
        int pts = tile_points(wall, rows[k], cols[i], colours[k]);
        wall[rows[k]][cols[i]] = colours[k];
        double v = pts + place_search(wall, rows, colours, n, k + 1, floor_len);
        wall[rows[k]][cols[i]] = EMPTY;
        if (v > best) best = v;
    }
    return best;
}

static int choose_place(const Option *opts, int n_opts, const Obs *obs, int seat) {
    const Player *me = &obs->players[seat];
    int row = obs->pending_line;
    if (row < 0 || row > 4) return 0;
    int colour = me->line_colour[row];
    if (colour < 0 || colour > 4) return 0;
    int rows[5], colours[5], n = 0;
    for (int i = row + 1; i < 5; i++)
        if (me->line_count[i] == i + 1 && me->line_colour[i] >= 0) {
            rows[n] = i;
            colours[n++] = me->line_colour[i];
        }
    int wall[5][5];
    memcpy(wall, me->wall, sizeof wall);
    int best_i = 0;
    double best_v = -INFINITY;
    for (int i = 0; i < n_opts; i++) {
        int col = opts[i].column;
        if (col < 0 || col > 4 || wall[row][col] != EMPTY) continue;
        int pts = tile_points(wall, row, col, colour);
        wall[row][col] = colour;
        int blocked = 0, cols[5];
        for (int j = 0; j < 5; j++)
            if (me->line_count[j] > 0 && me->line_count[j] < j + 1 &&
                legal_columns(wall, j, me->line_colour[j], 1, cols) == 0)
                blocked++;
        double v = pts + place_search(wall, rows, colours, n, 0, me->floor_len) - 2.0 * blocked;
        wall[row][col] = EMPTY;
        if (v > best_v + EPS) {
            best_v = v;
            best_i = i;
        }
    }
    return best_i;
}

/* Index of the option to play for a `decide` request. */
static int choose(int msg) {
    static Option opts[MAX_OPTIONS];
    static Obs obs;
    int options = jget(msg, "options");
    int n_opts = jlen(options);
    if (n_opts <= 1) return 0;
    if (n_opts > MAX_OPTIONS) n_opts = MAX_OPTIONS;
    int seat = (int)jint(jget(msg, "seat"), -1);
    if (!read_obs(jget(msg, "observation"), &obs) || seat < 0 || seat >= obs.n_players) {
        fprintf(stderr, "c-greedy: unreadable observation, playing option 0\n");
        return 0;
    }
    int place = jstr_eq(jget(msg, "decision"), "place");
    int c = nodes[options].first;
    for (int i = 0; i < n_opts; i++, c = nodes[c].next) {
        opts[i].source = (int)jint(jget(c, "source"), -1);
        opts[i].colour = (int)jint(jget(c, "colour"), -1);
        opts[i].line = (int)jint(jget(c, "line"), -1);
        opts[i].column = (int)jint(jget(c, "column"), -1);
    }
    return place ? choose_place(opts, n_opts, &obs, seat) : choose_draft(opts, n_opts, &obs, seat);
}

/* ============================================================== message loop */

/* Read one line of any length (without the '\n'); returns its length, -1 at EOF.
 * getline() reads the stream a buffer at a time (getchar() locks it once per character). */
static long read_line(char **buf, size_t *cap) {
    ssize_t len = getline(buf, cap, stdin);
    if (len < 0) return -1;
    if (len > 0 && (*buf)[len - 1] == '\n') (*buf)[--len] = '\0';
    return (long)len;
}

int main(void) {
    char *buf = NULL;
    size_t cap = 0;
    long len;
    setvbuf(stdout, NULL, _IOLBF, 0); /* each line is flushed; we also fflush explicitly */
    while ((len = read_line(&buf, &cap)) >= 0) {
        int msg = json_parse(buf, (size_t)len);
        if (msg < 0 || nodes[msg].type != J_OBJ) {
            if (len > 0) fprintf(stderr, "c-greedy: ignoring a line that is not a JSON object\n");
            continue;
        }
        int type = jget(msg, "type");
        if (jstr_eq(type, "hello")) {
            if (jint(jget(msg, "protocol"), -1) != PROTOCOL)
                fprintf(stderr, "c-greedy: the referee speaks another protocol version\n");
            printf("{\"type\":\"ready\",\"protocol\":%d,\"name\":\"%s\",\"version\":\"1\"}\n",
                   PROTOCOL, NAME);
            fflush(stdout);
        } else if (jstr_eq(type, "decide")) {
            int id = jget(msg, "id");
            if (!jis_int(id)) {
                fprintf(stderr, "c-greedy: decide without an id\n");
                continue;
            }
            int index = choose(msg);
            printf("{\"type\":\"move\",\"id\":%lld,\"index\":%d}\n", nodes[id].inum, index);
            fflush(stdout);
        } else if (jstr_eq(type, "quit")) {
            break;
        }
        /* game_start, game_end and unknown types need no answer */
    }
    free(buf);
    free(nodes);
    return 0;
}
