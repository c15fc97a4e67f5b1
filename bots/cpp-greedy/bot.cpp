// cpp-greedy: a starter Azul Arena bot (protocol v1) in C++17.
//
// Build: g++ -O2 -std=c++17 -o bot bot.cpp      Run: ./bot
//
// The referee writes one JSON message per line on stdin; the bot answers `hello`
// with `ready` and every `decide` with `move`, one JSON line each on stdout, flushed
// (std::endl flushes). Logs go to std::cerr. JSON is parsed with nlohmann/json
// (header-only; Debian package nlohmann-json3-dev). Unknown fields are ignored.
//
// The strategy is a one-ply greedy: every option is scored by its immediate effect
// on the bot's own board, and the best one is played. Change choose() to do better.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

using json = nlohmann::json;

namespace {

const char* const kName = "cpp-greedy";
constexpr int kProtocol = 1;
constexpr int kCentre = -1;  // option.source of the centre
constexpr int kFloor = -1;   // option.line of the floor
constexpr int kEmpty = -1;   // an empty wall cell
constexpr int kFloorPenalty[8] = {0, 1, 2, 4, 6, 8, 11, 14};  // total for n floor items

using Wall = int[5][5];  // wall[row][column]: a colour 0..4, or kEmpty

int floor_cost(int items) { return kFloorPenalty[std::min(items, 7)]; }

void read_wall(const json& cells, Wall& wall) {
    for (int r = 0; r < 5; ++r)
        for (int c = 0; c < 5; ++c) {
            const json& cell = cells.at(r).at(c);
            wall[r][c] = cell.is_null() ? kEmpty : cell.get<int>();
        }
}

// Columns of `row` that can take `colour`.
std::vector<int> legal_columns(const Wall& wall, int row, int colour, bool gray) {
    if (!gray) {  // coloured wall: cell (r, c) has colour (c - r) mod 5
        int col = (row + colour) % 5;
        return wall[row][col] == kEmpty ? std::vector<int>{col} : std::vector<int>{};
    }
    for (int c = 0; c < 5; ++c)  // gray wall: once per row and once per column
        if (wall[row][c] == colour) return {};
    std::vector<int> cols;
    for (int c = 0; c < 5; ++c) {
        bool ok = wall[row][c] == kEmpty;
        for (int r = 0; r < 5 && ok; ++r) ok = wall[r][c] != colour;
        if (ok) cols.push_back(c);
    }
    return cols;
}

// Points for a tile put on (row, col): the horizontal and vertical runs it joins.
int tile_points(const Wall& wall, int row, int col) {
    int h = 1, v = 1;
    for (int c = col - 1; c >= 0 && wall[row][c] != kEmpty; --c) ++h;
    for (int c = col + 1; c < 5 && wall[row][c] != kEmpty; ++c) ++h;
    for (int r = row - 1; r >= 0 && wall[r][col] != kEmpty; --r) ++v;
    for (int r = row + 1; r < 5 && wall[r][col] != kEmpty; ++r) ++v;
    if (h == 1 && v == 1) return 1;
    return (h > 1 ? h : 0) + (v > 1 ? v : 0);
}

// Points of the best legal column, or -1 when there is none.
int best_column_points(const Wall& wall, int row, int colour, bool gray) {
    int best = -1;
    for (int col : legal_columns(wall, row, colour, gray))
        best = std::max(best, tile_points(wall, row, col));
    return best;
}

// What taking `opt` is worth to `me`, in points.
double draft_value(const json& opt, const json& obs, const json& me, const Wall& wall) {
    bool gray = obs.at("variant") == "gray";
    int source = opt.at("source"), colour = opt.at("colour"), line = opt.at("line");
    int n = source == kCentre ? obs.at("centre").at(colour).get<int>()
                              : obs.at("factories").at(source).at(colour).get<int>();
    int marker = source == kCentre && obs.at("marker_in_centre").get<bool>() ? 1 : 0;
    int on_floor = static_cast<int>(me.at("floor").size());
    double dump = floor_cost(on_floor + marker + n) - floor_cost(on_floor);
    if (line == kFloor) return -dump - 0.5;
    int capacity = line + 1;
    int have = me.at("lines").at(line).at("count");
    int placed = std::min(n, capacity - have);
    int overflow = n - placed;
    int points = best_column_points(wall, line, colour, gray);
    if (points < 0) return -dump - 1;  // gray wall: no column left for this colour
    double value = (points + 1.0) * placed / capacity;
    if (have + placed == capacity)
        value += 1;  // the line is tiled (and scores) at the end of this round
    else
        value -= 0.1 * (capacity - have - placed);  // the line stays blocked
    return value - (floor_cost(on_floor + marker + overflow) - floor_cost(on_floor));
}

// Index of the option to play. Put your own logic here.
int choose(const json& req) {
    const json& obs = req.at("observation");
    const json& me = obs.at("players").at(req.at("seat").get<int>());
    Wall wall;
    read_wall(me.at("wall"), wall);
    const json& options = req.at("options");
    bool place = req.at("decision") == "place";
    int best = 0;
    double best_value = -1e18;
    for (size_t i = 0; i < options.size(); ++i) {
        double value = place  // gray wall: the column that scores most
                           ? tile_points(wall, obs.at("pending_line"), options[i].at("column"))
                           : draft_value(options[i], obs, me, wall);
        if (value > best_value) {  // ties: the first option wins
            best = static_cast<int>(i);
            best_value = value;
        }
    }
    return best;
}

void send(const json& message) {
    std::cout << message.dump() << std::endl;  // std::endl writes '\n' and flushes
}

}  // namespace

int main() {
    std::ios::sync_with_stdio(false);
    std::string line;
    while (std::getline(std::cin, line)) {  // std::string grows: lines have no fixed limit
        json msg = json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (!msg.is_object()) {
            std::cerr << "ignoring a line that is not a JSON object\n";
            continue;
        }
        std::string type = msg.value("type", "");
        if (type == "hello") {
            send({{"type", "ready"}, {"protocol", kProtocol}, {"name", kName}, {"version", "1"}});
        } else if (type == "decide") {
            int index = 0;
            try {
                index = choose(msg);
            } catch (const std::exception& e) {  // a bug must not kill the bot
                std::cerr << "choose failed: " << e.what() << std::endl;
            }
            send({{"type", "move"}, {"id", msg.at("id")}, {"index", index}});
        } else if (type == "quit") {
            break;
        }  // game_start, game_end and unknown types need no answer
    }
    return 0;
}
