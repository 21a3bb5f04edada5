package hello

import akka.actor.{ActorSystem, CoordinatedShutdown}
import akka.http.scaladsl.Http
import akka.http.scaladsl.marshallers.sprayjson.SprayJsonSupport._
import akka.http.scaladsl.server.Directives._
import akka.http.scaladsl.server.Route
import spray.json.DefaultJsonProtocol._
import spray.json.RootJsonFormat
import sun.misc.Signal

import scala.concurrent.Await
import scala.concurrent.duration._
import scala.util.{Failure, Success}

final case class Message(message: String)

object Routes {
  implicit val messageFormat: RootJsonFormat[Message] = jsonFormat1(Message.apply)

  // Anything not matched here is rejected and Akka HTTP answers 404.
  val route: Route =
    get {
      concat(
        pathSingleSlash {
          complete("Hello, World!") // text/plain; charset=UTF-8
        },
        path("json") {
          complete(Message("Hello, World!")) // marshalled by spray-json on every request
        }
      )
    }
}

object Main {
  private case object SigtermReason extends CoordinatedShutdown.Reason

  def main(args: Array[String]): Unit = {
    val port = sys.env.getOrElse("PORT", "8080").toInt
    // svcbench's {host}; loopback when unset, never every interface by default.
    val host = sys.env.getOrElse("HOST", "127.0.0.1")

    implicit val system: ActorSystem = ActorSystem("hello")
    import system.dispatcher

    Http().newServerAt(host, port).bind(Routes.route).onComplete {
      case Success(binding) =>
        // On shutdown: unbind, let in-flight requests finish (at most 10 s), then close connections.
        binding.addToCoordinatedShutdown(hardTerminationDeadline = 10.seconds)
        system.log.info("hello-akka-http listening on {}", binding.localAddress)
      case Failure(e) =>
        system.log.error(e, "cannot bind {}:{}", host, port)
        sys.exit(1)
    }

    // The JVM's own SIGTERM handling exits with status 143; run the coordinated shutdown
    // ourselves instead so that a requested stop ends with status 0.
    Signal.handle(new Signal("TERM"), _ => CoordinatedShutdown(system).run(SigtermReason))

    Await.result(system.whenTerminated, Duration.Inf)
    sys.exit(0)
  }
}
