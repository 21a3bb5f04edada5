package hello

import akka.actor.{Actor, ActorSystem, Props}
import akka.io.IO
import akka.pattern.ask
import akka.util.Timeout
import spray.can.Http
import spray.httpx.SprayJsonSupport._
import spray.json.{CompactPrinter, DefaultJsonProtocol, JsonPrinter, RootJsonFormat}
import spray.routing.HttpService
import sun.misc.{Signal, SignalHandler}

import scala.concurrent.Await
import scala.concurrent.duration._

case class Message(message: String)

object Message extends DefaultJsonProtocol {
  implicit val format: RootJsonFormat[Message] = jsonFormat1(Message.apply)
}

// The route lives in a trait, as in spray's template, so it can be tested without an actor.
trait HelloService extends HttpService {
  // spray's marshaller pretty-prints unless a printer is in scope; the contract wants compact JSON.
  implicit val printer: JsonPrinter = CompactPrinter

  // Requests that no branch accepts are rejected, and runRoute answers 404.
  val route =
    get {
      pathSingleSlash {
        complete("Hello, World!") // text/plain; charset=UTF-8
      } ~
      path("json") {
        complete(Message("Hello, World!")) // marshalled by spray-json on every request
      }
    }
}

class HelloServiceActor extends Actor with HelloService {
  def actorRefFactory = context
  def receive = runRoute(route)
}

object Main {
  def main(args: Array[String]): Unit = {
    val port = sys.env.getOrElse("PORT", "8080").toInt
    // svcbench's {host}; loopback when unset, never every interface by default.
    val host = sys.env.getOrElse("HOST", "127.0.0.1")

    implicit val system = ActorSystem("hello-spray")
    implicit val timeout = Timeout(10.seconds)
    val service = system.actorOf(Props[HelloServiceActor], "hello-service")

    Await.result(IO(Http) ? Http.Bind(service, interface = host, port = port), timeout.duration) match {
      case _: Http.Bound =>
        () // spray-can's listener already logs "Bound to <address>": the one start line
      case other =>
        // Written directly: Akka's asynchronous logger may not flush before the exit.
        Console.err.println(s"hello-spray: cannot bind $host:$port: $other")
        system.shutdown()
        sys.exit(1)
    }

    // Spray has no graceful drain of open connections: the best it offers is to unbind the
    // listener (CloseAll), then stop the actor system. The JVM's default SIGTERM handling would
    // exit with status 143, so handle the signal here and exit 0 once stopped.
    Signal.handle(new Signal("TERM"), new SignalHandler {
      def handle(sig: Signal): Unit = {
        Await.ready(IO(Http) ? Http.CloseAll, timeout.duration)
        system.shutdown()
      }
    })

    system.awaitTermination()
    sys.exit(0)
  }
}
