package locations

import io.ktor.server.application.createApplicationPlugin
import io.ktor.server.application.hooks.ResponseSent
import io.ktor.util.AttributeKey
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger

/**
 * Counts the calls in flight so that a stop can wait for them.
 *
 * Netty's engine stop closes every open connection as soon as its event loops start shutting
 * down, even when a call is still waiting for the store, so the service drains first: once
 * [drain] is called, new calls are refused with 503 and the ones in flight are allowed to finish.
 */
class InFlightCalls {
    private val active = AtomicInteger()

    @Volatile
    private var draining = false

    private val counted = AttributeKey<Unit>("InFlightCalls.counted")

    val plugin = createApplicationPlugin("InFlightCalls") {
        onCall { call ->
            if (draining) throw ApiException(503, "The service is shutting down.")
            active.incrementAndGet()
            call.attributes.put(counted, Unit)
        }
        on(ResponseSent) { call ->
            if (call.attributes.contains(counted)) active.decrementAndGet()
        }
    }

    /** Refuses new calls, then waits until the calls in flight are answered (at most [timeoutMillis]). */
    fun drain(timeoutMillis: Long) {
        draining = true
        val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis)
        while (active.get() > 0 && System.nanoTime() < deadline) Thread.sleep(10)
    }
}
