package users

import app.cash.sqldelight.driver.jdbc.asJdbcDriver
import com.zaxxer.hikari.HikariConfig
import com.zaxxer.hikari.HikariDataSource
import org.http4k.core.HttpHandler
import org.http4k.core.Method.GET
import org.http4k.core.Request
import org.http4k.core.Response
import org.http4k.core.Status
import org.http4k.core.Status.Companion.BAD_REQUEST
import org.http4k.core.Status.Companion.CONFLICT
import org.http4k.core.Status.Companion.INTERNAL_SERVER_ERROR
import org.http4k.core.Status.Companion.NOT_FOUND
import org.http4k.core.Status.Companion.OK
import org.http4k.routing.bind
import org.http4k.routing.routes
import org.http4k.server.ServerConfig.StopMode
import org.http4k.server.asServer
import org.sqlite.SQLiteConfig
import sun.misc.Signal
import java.time.Duration
import java.util.concurrent.CountDownLatch

private fun text(status: Status, body: String) =
    Response(status).header("Content-Type", "text/plain; charset=utf-8").body(body)

/** Runs [block] with the trimmed `name` query parameter, or answers 400 when it is blank. */
private fun withName(request: Request, block: (String) -> Response): Response {
    val name = request.query("name")?.trim().orEmpty()
    return if (name.isEmpty()) text(BAD_REQUEST, "Invalid 'name' given: it must not be empty") else block(name)
}

fun makeApp(users: Users): HttpHandler = routes(
    "/ping" bind GET to { text(OK, "pong") },

    "/add" bind GET to { request ->
        withName(request) { name ->
            try {
                when (users.add(name)) {
                    Users.AddResult.Added -> text(OK, "Welcome to our community $name!")
                    Users.AddResult.AlreadyExists -> text(CONFLICT, "Sadly the name is already taken: $name")
                }
            } catch (e: Exception) {
                System.err.println("add '$name' failed: $e")
                text(INTERNAL_SERVER_ERROR, "Sadly we failed to register you: $name")
            }
        }
    },

    "/" bind GET to { request ->
        withName(request) { name ->
            try {
                if (users.exists(name)) text(OK, "Boom! We found you: $name")
                else text(NOT_FOUND, "Sadly we could not find you: $name")
            } catch (e: Exception) {
                System.err.println("lookup '$name' failed: $e")
                text(INTERNAL_SERVER_ERROR, "Sadly the lookup failed: $name")
            }
        }
    },
)

fun main() {
    val port = System.getenv("PORT")?.toInt() ?: 9000
    // svcbench's {host}; loopback when unset, never every interface by default.
    val host = System.getenv("HOST")?.takeIf { it.isNotBlank() } ?: "127.0.0.1"
    val dbPath = System.getenv("DATABASE_PATH") ?: error("DATABASE_PATH is not set")

    // Only warnings and errors from the pool (slf4j-simple), so the start line below stays the one line.
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn")

    val sqlite = SQLiteConfig().apply {
        setJournalMode(SQLiteConfig.JournalMode.WAL)
        // Writers queue behind each other under load instead of failing with SQLITE_BUSY at once.
        setBusyTimeout(10_000)
    }
    // A pool of open SQLite connections, as the Go service has; JdbcSqliteDriver would open and
    // close a connection for every statement (see README).
    val dataSource = HikariDataSource(
        HikariConfig().apply {
            jdbcUrl = "jdbc:sqlite:$dbPath"
            dataSourceProperties = sqlite.toProperties()
            maximumPoolSize = 10
            poolName = "users"
        },
    )
    val users = Users(dataSource.asJdbcDriver()).apply { createTable() }

    val server = makeApp(users)
        .asServer(ApacheCore5Server(host, port, StopMode.Graceful(Duration.ofSeconds(5))))
        .start()
    println("users (kotlin http4k apache, sqldelight) listening on $host:${server.port()}, database $dbPath")

    // Handle SIGTERM ourselves (rather than in a shutdown hook) so the JVM exits with status 0.
    val stopRequested = CountDownLatch(1)
    listOf("TERM", "INT").forEach { Signal.handle(Signal(it)) { stopRequested.countDown() } }
    stopRequested.await()

    server.stop()
    dataSource.close()
    println("users stopped")
}
