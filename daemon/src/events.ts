/** The daemon's in-process event bus: sessions publish, /v1/events subscribers receive. */
import { EventEmitter } from 'node:events';
import type { DaemonEvent } from './client/api.js';

export class EventBus {
  readonly #emitter = new EventEmitter();

  constructor() {
    // every /v1/events connection and every waiting `check` is one listener
    this.#emitter.setMaxListeners(0);
  }

  emit(event: DaemonEvent): void {
    this.#emitter.emit('event', event);
  }

  subscribe(fn: (event: DaemonEvent) => void): () => void {
    this.#emitter.on('event', fn);
    return () => this.#emitter.off('event', fn);
  }
}
