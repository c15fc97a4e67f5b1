// java-greedy: a starter Azul Arena bot (protocol v1) in Java 17.
//
// Build: javac -cp /usr/share/java/gson.jar -d classes Bot.java
// Run:   java -cp classes:/usr/share/java/gson.jar Bot
//
// The referee writes one JSON message per line on stdin; the bot answers `hello`
// with `ready` and every `decide` with `move`, one JSON line each on stdout, flushed
// (System.out is block-buffered on a pipe: call flush() after every line). Logs go to
// System.err. JSON is parsed with Gson's JsonParser; unknown fields are ignored.
//
// The strategy is a one-ply greedy: every option is scored by its immediate effect
// on the bot's own board, and the best one is played. Change choose() to do better.

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public final class Bot {
    static final String NAME = "java-greedy";
    static final int PROTOCOL = 1;
    static final int CENTRE = -1; // option.source of the centre
    static final int FLOOR = -1; // option.line of the floor
    static final int EMPTY = -1; // an empty wall cell
    static final int[] FLOOR_PENALTY = {0, 1, 2, 4, 6, 8, 11, 14}; // total for n floor items

    static int floorCost(int items) {
        return FLOOR_PENALTY[Math.min(items, 7)];
    }

    /** wall[row][column]: a colour 0..4, or EMPTY. */
    static int[][] readWall(JsonArray cells) {
        int[][] wall = new int[5][5];
        for (int r = 0; r < 5; r++) {
            JsonArray row = cells.get(r).getAsJsonArray();
            for (int c = 0; c < 5; c++) {
                JsonElement cell = row.get(c);
                wall[r][c] = cell.isJsonNull() ? EMPTY : cell.getAsInt();
            }
        }
        return wall;
    }

    /** Columns of {@code row} that can take {@code colour}. */
    static List<Integer> legalColumns(int[][] wall, int row, int colour, boolean gray) {
        List<Integer> cols = new ArrayList<>();
        if (!gray) { // coloured wall: cell (r, c) has colour (c - r) mod 5
            int col = (row + colour) % 5;
            if (wall[row][col] == EMPTY) cols.add(col);
            return cols;
        }
        for (int c = 0; c < 5; c++) { // gray wall: once per row and once per column
            if (wall[row][c] == colour) return cols;
        }
        for (int c = 0; c < 5; c++) {
            boolean ok = wall[row][c] == EMPTY;
            for (int r = 0; r < 5 && ok; r++) ok = wall[r][c] != colour;
            if (ok) cols.add(c);
        }
        return cols;
    }

    /** Points for a tile put on (row, col): the horizontal and vertical runs it joins. */
    static int tilePoints(int[][] wall, int row, int col) {
        int h = 1, v = 1;
        for (int c = col - 1; c >= 0 && wall[row][c] != EMPTY; c--) h++;
        for (int c = col + 1; c < 5 && wall[row][c] != EMPTY; c++) h++;
        for (int r = row - 1; r >= 0 && wall[r][col] != EMPTY; r--) v++;
        for (int r = row + 1; r < 5 && wall[r][col] != EMPTY; r++) v++;
        if (h == 1 && v == 1) return 1;
        return (h > 1 ? h : 0) + (v > 1 ? v : 0);
    }

    /** Points of the best legal column, or -1 when there is none. */
    static int bestColumnPoints(int[][] wall, int row, int colour, boolean gray) {
        int best = -1;
        for (int col : legalColumns(wall, row, colour, gray)) {
            best = Math.max(best, tilePoints(wall, row, col));
        }
        return best;
    }

    /** What taking {@code opt} is worth to {@code me}, in points. */
    static double draftValue(JsonObject opt, JsonObject obs, JsonObject me, int[][] wall) {
        boolean gray = obs.get("variant").getAsString().equals("gray");
        int source = opt.get("source").getAsInt();
        int colour = opt.get("colour").getAsInt();
        int line = opt.get("line").getAsInt();
        int n;
        int marker = 0;
        if (source == CENTRE) {
            n = obs.getAsJsonArray("centre").get(colour).getAsInt();
            if (obs.get("marker_in_centre").getAsBoolean()) marker = 1;
        } else {
            n = obs.getAsJsonArray("factories").get(source).getAsJsonArray().get(colour).getAsInt();
        }
        int onFloor = me.getAsJsonArray("floor").size();
        double dump = floorCost(onFloor + marker + n) - floorCost(onFloor);
        if (line == FLOOR) return -dump - 0.5;
        int capacity = line + 1;
        int have = me.getAsJsonArray("lines").get(line).getAsJsonObject().get("count").getAsInt();
        int placed = Math.min(n, capacity - have);
        int overflow = n - placed;
        int points = bestColumnPoints(wall, line, colour, gray);
        if (points < 0) return -dump - 1; // gray wall: no column left for this colour
        double value = (points + 1.0) * placed / capacity;
        if (have + placed == capacity) {
            value += 1; // the line is tiled (and scores) at the end of this round
        } else {
            value -= 0.1 * (capacity - have - placed); // the line stays blocked
        }
        return value - (floorCost(onFloor + marker + overflow) - floorCost(onFloor));
    }

    /** Index of the option to play. Put your own logic here. */
    static int choose(JsonObject req) {
        JsonObject obs = req.getAsJsonObject("observation");
        JsonObject me = obs.getAsJsonArray("players").get(req.get("seat").getAsInt()).getAsJsonObject();
        int[][] wall = readWall(me.getAsJsonArray("wall"));
        JsonArray options = req.getAsJsonArray("options");
        boolean place = req.get("decision").getAsString().equals("place");
        int best = 0;
        double bestValue = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < options.size(); i++) {
            JsonObject opt = options.get(i).getAsJsonObject();
            double value = place // gray wall: the column that scores most
                    ? tilePoints(wall, obs.get("pending_line").getAsInt(), opt.get("column").getAsInt())
                    : draftValue(opt, obs, me, wall);
            if (value > bestValue) { // ties: the first option wins
                best = i;
                bestValue = value;
            }
        }
        return best;
    }

    // UTF-8 whatever the locale; autoflush off: send() flushes after each line.
    static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    static void send(JsonObject message) {
        OUT.print(message.toString() + "\n");
        OUT.flush(); // without this the answer sits in the buffer and the bot times out
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) { // readLine grows: lines have no fixed limit
            JsonObject msg;
            try {
                JsonElement parsed = JsonParser.parseString(line);
                if (!parsed.isJsonObject()) continue;
                msg = parsed.getAsJsonObject();
            } catch (JsonParseException e) {
                System.err.println("ignoring a line that is not JSON: " + e.getMessage());
                continue;
            }
            JsonElement type = msg.get("type");
            String kind = type != null && type.isJsonPrimitive() ? type.getAsString() : "";
            switch (kind) {
                case "hello" -> {
                    JsonObject ready = new JsonObject();
                    ready.addProperty("type", "ready");
                    ready.addProperty("protocol", PROTOCOL);
                    ready.addProperty("name", NAME);
                    ready.addProperty("version", "1");
                    send(ready);
                }
                case "decide" -> {
                    int index = 0;
                    try {
                        index = choose(msg);
                    } catch (RuntimeException e) { // a bug must not kill the bot
                        System.err.println("choose failed: " + e);
                    }
                    JsonObject move = new JsonObject();
                    move.addProperty("type", "move");
                    move.add("id", msg.get("id"));
                    move.addProperty("index", index);
                    send(move);
                }
                case "quit" -> {
                    return;
                }
                default -> {
                    // game_start, game_end and unknown types need no answer
                }
            }
        }
    }
}
