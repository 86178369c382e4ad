export { ALERT_EVENTS, alertBody, type AlertEvent, type AlertEventType } from "./alert-events.js";
export { AlertSender, type AlertSecrets, type AlertSenderOptions } from "./alert-sender.js";
export { AlertWatch, type AlertWatchDeps } from "./alert-watch.js";
export { postWebhook, webhookUrlProblem, type WebhookReach } from "./webhook-post.js";
export { newWebhookSecret, signWebhook } from "./webhook-signature.js";
