package meridian;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * pgjdbc's DatabaseMetaData over one schema, as JSON on stdout: for each call, its column
 * labels and rows (every value by getString), or the SQLSTATE and message of its error.
 *
 * <p>Usage: java meridian.Metadata JDBC_URL. Creates the jm_ tables, index and view,
 * prints, and drops them again.
 */
public final class Metadata {
    private static final String[] SETUP = {
        "DROP VIEW IF EXISTS jm_big_orders",
        "DROP TABLE IF EXISTS jm_orders",
        "DROP TABLE IF EXISTS jm_customers",
        "CREATE TABLE jm_customers (id int PRIMARY KEY, email varchar(100) NOT NULL,"
            + " name text, created timestamptz DEFAULT now(), balance numeric(12,2) DEFAULT 0,"
            + " vip boolean, score float8, ext bigint)",
        "CREATE UNIQUE INDEX jm_customers_email_key ON jm_customers (email)",
        "CREATE TABLE jm_orders (customer_id int, order_no int, placed date NOT NULL,"
            + " total numeric(10,2), note text, PRIMARY KEY (customer_id, order_no),"
            + " CONSTRAINT jm_orders_customer_fk FOREIGN KEY (customer_id)"
            + " REFERENCES jm_customers (id) ON DELETE CASCADE)",
        "CREATE INDEX jm_orders_placed_idx ON jm_orders (placed, total)",
        "CREATE VIEW jm_big_orders AS SELECT customer_id, total FROM jm_orders WHERE total > 100",
    };
    private static final String[] TEARDOWN = {
        "DROP VIEW IF EXISTS jm_big_orders",
        "DROP TABLE IF EXISTS jm_orders",
        "DROP TABLE IF EXISTS jm_customers",
    };

    private interface Call {
        ResultSet run(DatabaseMetaData md) throws SQLException;
    }

    public static void main(String[] args) throws SQLException {
        if (args.length != 1) {
            System.err.println("usage: java meridian.Metadata JDBC_URL");
            System.exit(2);
        }
        Map<String, Call> calls = new LinkedHashMap<>();
        calls.put("getTables", md -> md.getTables(null, "public", "jm\\_%", null));
        calls.put("getColumns", md -> md.getColumns(null, "public", "jm\\_%", "%"));
        calls.put("getPrimaryKeys(jm_customers)", md -> md.getPrimaryKeys(null, "public", "jm_customers"));
        calls.put("getPrimaryKeys(jm_orders)", md -> md.getPrimaryKeys(null, "public", "jm_orders"));
        calls.put("getIndexInfo(jm_customers)",
            md -> md.getIndexInfo(null, "public", "jm_customers", false, false));
        calls.put("getIndexInfo(jm_orders)",
            md -> md.getIndexInfo(null, "public", "jm_orders", false, false));
        calls.put("getIndexInfo(jm_orders, unique)",
            md -> md.getIndexInfo(null, "public", "jm_orders", true, false));
        calls.put("getImportedKeys(jm_orders)", md -> md.getImportedKeys(null, "public", "jm_orders"));
        calls.put("getExportedKeys(jm_customers)",
            md -> md.getExportedKeys(null, "public", "jm_customers"));
        calls.put("getCrossReference",
            md -> md.getCrossReference(null, "public", "jm_customers", null, "public", "jm_orders"));
        calls.put("getSchemas", md -> md.getSchemas());
        calls.put("getTypeInfo", md -> md.getTypeInfo());

        try (Connection conn = DriverManager.getConnection(args[0])) {
            execute(conn, SETUP);
            StringBuilder out = new StringBuilder("{");
            String sep = "";
            DatabaseMetaData md = conn.getMetaData();
            for (Map.Entry<String, Call> call : calls.entrySet()) {
                out.append(sep).append(quote(call.getKey())).append(": ");
                sep = ",\n";
                try (ResultSet rs = call.getValue().run(md)) {
                    writeResult(rs, out);
                } catch (SQLException e) {
                    out.append("{\"error\": ").append(quote(e.getSQLState() + ": " + e.getMessage()))
                        .append('}');
                }
            }
            System.out.println(out.append("}\n"));
            execute(conn, TEARDOWN);
        }
    }

    private static void execute(Connection conn, String[] statements) throws SQLException {
        try (Statement st = conn.createStatement()) {
            for (String sql : statements) {
                st.execute(sql);
            }
        }
    }

    private static void writeResult(ResultSet rs, StringBuilder out) throws SQLException {
        ResultSetMetaData meta = rs.getMetaData();
        out.append("{\"columns\": [");
        for (int i = 1; i <= meta.getColumnCount(); i++) {
            out.append(i > 1 ? ", " : "").append(quote(meta.getColumnLabel(i)));
        }
        out.append("], \"rows\": [");
        String rowSep = "";
        while (rs.next()) {
            out.append(rowSep).append('[');
            rowSep = ", ";
            for (int i = 1; i <= meta.getColumnCount(); i++) {
                out.append(i > 1 ? ", " : "").append(quote(rs.getString(i)));
            }
            out.append(']');
        }
        out.append("]}");
    }

    private static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder q = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> q.append("\\\"");
                case '\\' -> q.append("\\\\");
                case '\n' -> q.append("\\n");
                default -> {
                    if (c < 0x20) {
                        q.append(String.format("\\u%04x", (int) c));
                    } else {
                        q.append(c);
                    }
                }
            }
        }
        return q.append('"').toString();
    }
}
