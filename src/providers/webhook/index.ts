export { classifyAddress, isAddressAllowed, type AddressClass, type AddressPolicy } from "./address-class.js";
export {
  checkAddressLiteral,
  checkOutboundUrl,
  hostOf,
  OutboundUrlError,
  parseOutboundUrl,
  resolveAllowedAddresses,
  type HostResolver,
  type OutboundAddressOptions,
  type OutboundUrlRefusal,
  type ResolvedAddress,
} from "./outbound-url.js";
export { defaultSignatureToleranceSeconds, signWebhookBody, verifyWebhookSignature, webhookSignatureHeader } from "./webhook-signature.js";
export {
  createVideoWebhookEvent,
  videoWebhookIdempotencyKey,
  type VideoTerminalStatus,
  type VideoWebhookEvent,
  type VideoWebhookJob,
  type VideoWebhookUsage,
} from "./video-webhook-event.js";
export {
  createWebhookSender,
  idempotencyKeyHeader,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookDeliveryOutcome,
  type WebhookDeliveryResult,
  type WebhookSender,
  type WebhookSenderOptions,
} from "./webhook-sender.js";
