/**
 * SSH tunnels (`parameters.sshProxy`): the API is reached through an SSH server, as the
 * reference does for APIs on a private network. Every connection the extractor opens goes to a
 * local forwarder, which asks the SSH server for a `direct-tcpip` channel to the URL's host and
 * port: the name is resolved, and the connection made, on the SSH server's side. The SSH
 * protocol is the `ssh2` library's. One SSH connection serves a whole configuration run.
 */
import { createServer, type Server, type Socket } from 'node:net';
import ssh2 from 'ssh2';
import { UserError } from '../errors.js';
import type { ConnectTo } from './http-client.js';
import type { SshProxy } from './ssh-proxy.js';

// ssh2 is CommonJS: its default export, taken apart (named imports are not detected for it).
const { Client } = ssh2;
type Client = InstanceType<typeof Client>;

const CONNECT_TIMEOUT_MS = 30_000;

export class SshTunnel {
  /** Local forwarders by destination "host:port". */
  private readonly forwarders = new Map<string, Promise<{ server: Server; port: number }>>();
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly client: Client, private readonly where: string) {}

  /**
   * Connects to the SSH server (where `connectTo` says its host is, if it says so) and
   * authenticates with the key. Fails with a UserError naming the server and the reason.
   */
  static async open(proxy: SshProxy, connectTo?: ConnectTo): Promise<SshTunnel> {
    const where = `${proxy.user}@${proxy.host}:${proxy.port}`;
    const to = await connectTo?.(proxy.host, proxy.port, 'http:');
    const client = new Client();
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error) => reject(new UserError(`Cannot connect to the SSH proxy ${where}: ${err.message}`));
      client.once('ready', () => {
        client.off('error', fail);
        resolve();
      });
      client.once('error', fail);
      client.connect({
        host: to?.host ?? proxy.host,
        port: to?.port ?? proxy.port,
        username: proxy.user,
        privateKey: proxy.privateKey,
        readyTimeout: CONNECT_TIMEOUT_MS,
        keepaliveInterval: 15_000,
      });
    });
    const tunnel = new SshTunnel(client, where);
    // A connection lost later fails the requests that use it; the error event must be handled.
    client.on('error', () => undefined);
    return tunnel;
  }

  /** The HttpClient's ConnectTo: a connection to host:port goes to the local forwarder of that destination. */
  readonly connectTo: ConnectTo = async (host, port) => {
    const key = `${host}:${port}`;
    let forwarder = this.forwarders.get(key);
    if (!forwarder) this.forwarders.set(key, (forwarder = this.forwarder(host, port)));
    return { host: '127.0.0.1', port: (await forwarder).port };
  };

  private async forwarder(host: string, port: number): Promise<{ server: Server; port: number }> {
    const server = createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
      this.client.forwardOut('127.0.0.1', 0, host, port, (err, channel) => {
        if (err) {
          // The HTTP client sees the connection closed: a transport error it reports (and may retry).
          socket.destroy(new Error(`the SSH proxy ${this.where} could not connect to ${host}:${port}: ${err.message}`));
          return;
        }
        channel.on('error', () => socket.destroy());
        socket.pipe(channel).pipe(socket);
      });
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
    return { server, port: (server.address() as { port: number }).port };
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    for (const forwarder of this.forwarders.values()) {
      const { server } = await forwarder.catch(() => ({ server: undefined }));
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    }
    this.client.end();
  }
}
