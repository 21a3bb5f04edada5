package users

import app.cash.sqldelight.db.QueryResult
import app.cash.sqldelight.db.SqlDriver
import org.sqlite.SQLiteErrorCode
import org.sqlite.SQLiteException

/**
 * The users table, queried through SQLDelight's [SqlDriver].
 *
 * SQLDelight normally generates this class from a `.sq` file with its Gradle plugin; this build
 * uses Maven, so the few statements are written by hand against the same runtime API the generated
 * code calls (`execute` / `executeQuery` with bound parameters).
 */
class Users(private val driver: SqlDriver) {

    sealed interface AddResult {
        data object Added : AddResult
        data object AlreadyExists : AddResult
    }

    fun createTable() {
        driver.execute(
            null,
            """
            CREATE TABLE IF NOT EXISTS users (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                name TEXT,
                UNIQUE(name)
            )
            """.trimIndent(),
            0,
        )
    }

    fun exists(name: String): Boolean =
        driver.executeQuery(
            identifier = null,
            sql = "SELECT 1 FROM users WHERE name = ?",
            mapper = { cursor -> cursor.next() },
            parameters = 1,
        ) {
            bindString(0, name)
        }.value

    /** Inserts [name]; the UNIQUE constraint, not a prior lookup, decides whether it exists. */
    fun add(name: String): AddResult =
        try {
            driver.execute(null, "INSERT INTO users (name) VALUES (?)", 1) {
                bindString(0, name)
            }
            AddResult.Added
        } catch (e: SQLiteException) {
            if (e.resultCode == SQLiteErrorCode.SQLITE_CONSTRAINT_UNIQUE) AddResult.AlreadyExists else throw e
        }
}
