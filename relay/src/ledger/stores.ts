/**
 * The ledger's stores, one class per area over the one connection, built once by the
 * relay's composition root (createRelay) and handed to the services and routes.
 */
import { BlobUsageStore } from './blob-usage.js';
import { ContactStore } from './contacts.js';
import { KeyDirectory } from './keys.js';
import type { Ledger } from './ledger.js';
import { MessageStore } from './messages.js';
import { ProfileStore } from './profiles.js';
import { RelationStore } from './relations.js';
import { ReportStore } from './reports.js';
import { SourceStore } from './sources.js';
import { WebhookStore } from './webhooks.js';

export interface LedgerStores {
  readonly keys: KeyDirectory;
  readonly profiles: ProfileStore;
  readonly relations: RelationStore;
  readonly reports: ReportStore;
  readonly contacts: ContactStore;
  readonly messages: MessageStore;
  readonly webhooks: WebhookStore;
  readonly sources: SourceStore;
  readonly blobUsage: BlobUsageStore;
}

export function createStores(ledger: Ledger): LedgerStores {
  const webhooks = new WebhookStore(ledger);
  return {
    keys: new KeyDirectory(ledger),
    profiles: new ProfileStore(ledger),
    relations: new RelationStore(ledger),
    reports: new ReportStore(ledger),
    contacts: new ContactStore(ledger),
    messages: new MessageStore(ledger, webhooks),
    webhooks,
    sources: new SourceStore(ledger),
    blobUsage: new BlobUsageStore(ledger),
  };
}
