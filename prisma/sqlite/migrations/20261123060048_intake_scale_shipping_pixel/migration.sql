-- CreateTable
CREATE TABLE "ReceiptLease" (
    "partition" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "owner" TEXT,
    "leasedUntil" DATETIME
);

-- CreateTable
CREATE TABLE "ShopDue" (
    "shopId" TEXT NOT NULL PRIMARY KEY,
    "dueAt" DATETIME,
    "version" INTEGER NOT NULL DEFAULT 0,
    "leasedBy" TEXT,
    "leasedUntil" DATETIME,
    CONSTRAINT "ShopDue_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "OrderSummary" (
    "shopId" TEXT NOT NULL,
    "orderId" TEXT NOT NULL,
    "email" TEXT,
    "customerId" TEXT,
    "summary" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("shopId", "orderId"),
    CONSTRAINT "OrderSummary_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "FulfillmentState" (
    "shopId" TEXT NOT NULL,
    "fulfillmentId" TEXT NOT NULL,
    "orderId" TEXT,
    "email" TEXT,
    "state" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("shopId", "fulfillmentId"),
    CONSTRAINT "FulfillmentState_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "ProductInfo" (
    "shopId" TEXT NOT NULL,
    "productId" TEXT NOT NULL,
    "handle" TEXT,
    "url" TEXT,
    "imageUrl" TEXT,
    "variantImages" TEXT NOT NULL DEFAULT '{}',
    "fetchedAt" DATETIME NOT NULL,

    PRIMARY KEY ("shopId", "productId"),
    CONSTRAINT "ProductInfo_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "WebPixel" (
    "shopId" TEXT NOT NULL PRIMARY KEY,
    "key" TEXT NOT NULL,
    "webPixelId" TEXT,
    "state" TEXT NOT NULL,
    "error" TEXT,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "WebPixel_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_OutboxMessage" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "shopId" TEXT NOT NULL,
    "sourceId" TEXT NOT NULL,
    "kind" TEXT NOT NULL DEFAULT 'event',
    "topic" TEXT NOT NULL,
    "eventName" TEXT NOT NULL,
    "lane" INTEGER NOT NULL DEFAULT 0,
    "email" TEXT,
    "customerId" TEXT,
    "checkoutToken" TEXT,
    "orderId" TEXT,
    "body" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "heldReason" TEXT,
    "runAt" DATETIME NOT NULL,
    "dueAt" DATETIME NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "sends" INTEGER NOT NULL DEFAULT 0,
    "lockedBy" TEXT,
    "lockedUntil" DATETIME,
    "lastError" TEXT,
    "lastStatus" INTEGER,
    "latencyMs" BIGINT,
    "backfillId" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deliveredAt" DATETIME,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "OutboxMessage_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_OutboxMessage" ("attempts", "backfillId", "body", "checkoutToken", "createdAt", "customerId", "deliveredAt", "dueAt", "email", "eventName", "heldReason", "id", "kind", "lane", "lastError", "lastStatus", "latencyMs", "lockedBy", "lockedUntil", "orderId", "runAt", "shopId", "sourceId", "status", "topic", "updatedAt") SELECT "attempts", "backfillId", "body", "checkoutToken", "createdAt", "customerId", "deliveredAt", "dueAt", "email", "eventName", "heldReason", "id", "kind", "lane", "lastError", "lastStatus", "latencyMs", "lockedBy", "lockedUntil", "orderId", "runAt", "shopId", "sourceId", "status", "topic", "updatedAt" FROM "OutboxMessage";
DROP TABLE "OutboxMessage";
ALTER TABLE "new_OutboxMessage" RENAME TO "OutboxMessage";
CREATE INDEX "OutboxMessage_status_shopId_lane_runAt_id_idx" ON "OutboxMessage"("status", "shopId", "lane", "runAt", "id");
CREATE INDEX "OutboxMessage_status_runAt_idx" ON "OutboxMessage"("status", "runAt");
CREATE INDEX "OutboxMessage_status_lockedUntil_idx" ON "OutboxMessage"("status", "lockedUntil");
CREATE INDEX "OutboxMessage_shopId_checkoutToken_eventName_idx" ON "OutboxMessage"("shopId", "checkoutToken", "eventName");
CREATE INDEX "OutboxMessage_shopId_email_eventName_idx" ON "OutboxMessage"("shopId", "email", "eventName");
CREATE INDEX "OutboxMessage_shopId_customerId_idx" ON "OutboxMessage"("shopId", "customerId");
CREATE INDEX "OutboxMessage_shopId_orderId_idx" ON "OutboxMessage"("shopId", "orderId");
CREATE INDEX "OutboxMessage_shopId_status_deliveredAt_idx" ON "OutboxMessage"("shopId", "status", "deliveredAt");
CREATE INDEX "OutboxMessage_shopId_id_idx" ON "OutboxMessage"("shopId", "id");
CREATE INDEX "OutboxMessage_backfillId_idx" ON "OutboxMessage"("backfillId");
CREATE UNIQUE INDEX "OutboxMessage_shopId_sourceId_key" ON "OutboxMessage"("shopId", "sourceId");
CREATE TABLE "new_WebhookReceipt" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "webhookId" TEXT NOT NULL,
    "shopDomain" TEXT NOT NULL,
    "topic" TEXT NOT NULL,
    "kind" TEXT NOT NULL DEFAULT 'webhook',
    "body" TEXT,
    "apiVersion" TEXT,
    "triggeredAt" DATETIME,
    "receivedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "partition" INTEGER NOT NULL DEFAULT 0,
    "processedAt" DATETIME,
    "outcome" TEXT,
    "reason" TEXT,
    "messageCount" INTEGER NOT NULL DEFAULT 0,
    "customerId" TEXT
);
INSERT INTO "new_WebhookReceipt" ("customerId", "id", "messageCount", "outcome", "reason", "receivedAt", "shopDomain", "topic", "webhookId") SELECT "customerId", "id", "messageCount", "outcome", "reason", "receivedAt", "shopDomain", "topic", "webhookId" FROM "WebhookReceipt";
DROP TABLE "WebhookReceipt";
ALTER TABLE "new_WebhookReceipt" RENAME TO "WebhookReceipt";
CREATE UNIQUE INDEX "WebhookReceipt_webhookId_key" ON "WebhookReceipt"("webhookId");
CREATE INDEX "WebhookReceipt_partition_processedAt_id_idx" ON "WebhookReceipt"("partition", "processedAt", "id");
CREATE INDEX "WebhookReceipt_processedAt_receivedAt_idx" ON "WebhookReceipt"("processedAt", "receivedAt");
CREATE INDEX "WebhookReceipt_shopDomain_processedAt_idx" ON "WebhookReceipt"("shopDomain", "processedAt");
CREATE INDEX "WebhookReceipt_shopDomain_customerId_idx" ON "WebhookReceipt"("shopDomain", "customerId");
CREATE TABLE "new_WorkspacePacer" (
    "workspaceId" TEXT NOT NULL PRIMARY KEY,
    "limitPerSec" INTEGER NOT NULL DEFAULT 10,
    "nextSendUs" BIGINT NOT NULL DEFAULT 0,
    "takenBy" TEXT,
    "lastRemaining" INTEGER,
    "pausedUntil" DATETIME,
    "pauseReason" TEXT,
    "updatedAt" DATETIME NOT NULL
);
INSERT INTO "new_WorkspacePacer" ("lastRemaining", "limitPerSec", "pauseReason", "pausedUntil", "updatedAt", "workspaceId") SELECT "lastRemaining", "limitPerSec", "pauseReason", "pausedUntil", "updatedAt", "workspaceId" FROM "WorkspacePacer";
DROP TABLE "WorkspacePacer";
ALTER TABLE "new_WorkspacePacer" RENAME TO "WorkspacePacer";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "ShopDue_dueAt_idx" ON "ShopDue"("dueAt");

-- CreateIndex
CREATE INDEX "OrderSummary_shopId_customerId_idx" ON "OrderSummary"("shopId", "customerId");

-- CreateIndex
CREATE INDEX "OrderSummary_shopId_email_idx" ON "OrderSummary"("shopId", "email");

-- CreateIndex
CREATE INDEX "FulfillmentState_shopId_orderId_idx" ON "FulfillmentState"("shopId", "orderId");

-- CreateIndex
CREATE INDEX "FulfillmentState_shopId_email_idx" ON "FulfillmentState"("shopId", "email");

-- CreateIndex
CREATE UNIQUE INDEX "WebPixel_key_key" ON "WebPixel"("key");

