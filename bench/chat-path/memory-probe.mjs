// Preloaded (`node --expose-gc --import …/memory-probe.mjs`) into the gateway
// and host processes the chat-path bench spawns, so it can read their heap
// after a full collection without a debugger. It answers one IPC message,
// {type: "memory-probe", id}, with process.memoryUsage() before and after
// gc(); it does nothing in a process started without an IPC channel, and it
// never keeps a process alive (the channel is unreferenced).
if (process.send) {
  process.on("message", (message) => {
    if (message?.type !== "memory-probe") return;
    const before = process.memoryUsage();
    // Twice: the first pass may leave work for finalizers and weak callbacks.
    globalThis.gc?.();
    globalThis.gc?.();
    const after = process.memoryUsage();
    process.send({ type: "memory-probe", id: message.id, collected: typeof globalThis.gc === "function", before, after });
  });
  process.channel?.unref();
}
