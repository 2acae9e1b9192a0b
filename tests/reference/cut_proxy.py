"""A TCP front for a real server that dies part-way: it forwards connections to UPSTREAM until
BYTES bytes have come back from it in all, then closes every connection and stops listening, as a
server that crashes mid-read does. Prints "ready" once listening.

usage: python cut_proxy.py LISTEN_PORT UPSTREAM_HOST:PORT BYTES
"""
import socket
import sys
import threading


def main():
    port, upstream, limit = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    host, up_port = upstream.rsplit(":", 1)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(16)
    state = {"sent": 0, "dead": False}
    lock = threading.Lock()
    dead = threading.Event()
    open_sockets = []

    def pipe(src, dst, counts):
        try:
            while not dead.is_set():
                data = src.recv(65536)
                if not data:
                    break
                if counts:
                    with lock:
                        room = limit - state["sent"]
                        state["sent"] += len(data)
                    if room <= len(data):
                        dst.sendall(data[:max(room, 0)])
                        dead.set()
                        break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            if dead.is_set():
                for s in open_sockets:
                    try:
                        s.close()
                    except OSError:
                        pass

    print("ready", flush=True)
    listener.settimeout(0.2)
    while not dead.is_set():
        try:
            client, _ = listener.accept()
        except socket.timeout:
            continue
        server = socket.create_connection((host, int(up_port)))
        open_sockets.extend([client, server])
        threading.Thread(target=pipe, args=(client, server, False), daemon=True).start()
        threading.Thread(target=pipe, args=(server, client, True), daemon=True).start()
    listener.close()


if __name__ == "__main__":
    main()
