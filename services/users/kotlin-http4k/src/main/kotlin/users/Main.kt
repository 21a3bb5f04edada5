package users

import app.cash.sqldelight.driver.jdbc.sqlite.JdbcSqliteDriver
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
import org.http4k.server.ApacheServer
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
    val dbPath = System.getenv("DATABASE_PATH") ?: error("DATABASE_PATH is not set")

    val config = SQLiteConfig().apply {
        setJournalMode(SQLiteConfig.JournalMode.WAL)
        // Writers queue behind each other under load instead of failing with SQLITE_BUSY at once.
        setBusyTimeout(10_000)
    }
    val driver = JdbcSqliteDriver("jdbc:sqlite:$dbPath", config.toProperties())
    val users = Users(driver).apply { createTable() }

    val server = makeApp(users)
        .asServer(ApacheServer(port = port, stopMode = StopMode.Graceful(Duration.ofSeconds(5))))
        .start()
    println("users (kotlin http4k apache, sqldelight) listening on :${server.port()}, database $dbPath")

    // Handle SIGTERM ourselves (rather than in a shutdown hook) so the JVM exits with status 0.
    val stopRequested = CountDownLatch(1)
    listOf("TERM", "INT").forEach { Signal.handle(Signal(it)) { stopRequested.countDown() } }
    stopRequested.await()

    server.stop()
    driver.close()
    println("users stopped")
}
