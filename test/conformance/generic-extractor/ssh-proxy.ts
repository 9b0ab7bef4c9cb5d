/**
 * The reference's `ssh-proxy` service of the examples that tunnel (131, 133): a real SSH server
 * (the ssh2 library's) on a local port, which lets in the user `root` with the example's own key
 * (the public half of its `#privateKey`) and, for each `direct-tcpip` channel, connects to the
 * destination as the reference's docker network resolves it: `mock-server*` hosts are the mock,
 * whose API is reachable only through this server. Any other destination is refused.
 */
import { connect, type AddressInfo } from 'node:net';
import ssh2 from 'ssh2';

const { Server, utils } = ssh2;

export interface SshProxyServer {
  port: number;
  /** Channels opened to a destination: the requests that went through the tunnel. */
  readonly channels: number;
  close(): Promise<void>;
}

/**
 * An ed25519 private key ssh2 can read back. ssh2 1.17's generateKeyPairSync strips leading zero
 * bytes of the public key, so about 1 key in 256 is one its own parseKey refuses ("Malformed
 * OpenSSH private key"; mscdex/ssh2#1390, #1513): draw again until both halves parse.
 */
export function ed25519Key(): string {
  for (;;) {
    const pair = utils.generateKeyPairSync('ed25519');
    if (!(utils.parseKey(pair.private) instanceof Error) && !(utils.parseKey(pair.public) instanceof Error)) return pair.private;
  }
}

export async function startSshProxy(
  privateKey: string,
  resolve: (host: string, port: number) => { host: string; port: number } | undefined,
): Promise<SshProxyServer> {
  const allowed = utils.parseKey(privateKey);
  if (allowed instanceof Error) throw allowed;
  const allowedKey = Array.isArray(allowed) ? allowed[0] : allowed;
  const publicKey = allowedKey.getPublicSSH();
  const hostKey = ed25519Key();
  let channels = 0;
  const server = new Server({ hostKeys: [hostKey] }, (client) => {
    client.on('error', () => undefined);
    client.on('authentication', (ctx) => {
      const ours = ctx.method === 'publickey' && ctx.username === 'root' && ctx.key.algo === allowedKey.type && ctx.key.data.equals(publicKey);
      if (!ours) return ctx.reject(['publickey']);
      // Without a signature the client only asks whether the key would do; with one it proves it holds the key.
      if (!ctx.signature) return ctx.accept();
      return allowedKey.verify(ctx.blob!, ctx.signature, ctx.hashAlgo) === true ? ctx.accept() : ctx.reject(['publickey']);
    });
    client.on('tcpip', (accept, reject, info) => {
      const to = resolve(info.destIP, info.destPort);
      if (!to) return reject();
      const channel = accept();
      channels++;
      const socket = connect(to.port, to.host);
      socket.on('error', () => channel.destroy());
      channel.on('error', () => socket.destroy());
      channel.pipe(socket).pipe(channel);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    get channels() {
      return channels;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
