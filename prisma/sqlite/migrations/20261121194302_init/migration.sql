-- CreateTable
CREATE TABLE "Shop" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "domain" TEXT NOT NULL,
    "shopifyId" TEXT,
    "name" TEXT,
    "tokenStatus" TEXT NOT NULL DEFAULT 'none',
    "tokenError" TEXT,
    "installedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "uninstalledAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "Session" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "shop" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "isOnline" BOOLEAN NOT NULL DEFAULT false,
    "scope" TEXT,
    "expires" DATETIME,
    "accessToken" TEXT NOT NULL,
    "userId" BIGINT,
    "firstName" TEXT,
    "lastName" TEXT,
    "email" TEXT,
    "accountOwner" BOOLEAN NOT NULL DEFAULT false,
    "locale" TEXT,
    "collaborator" BOOLEAN DEFAULT false,
    "emailVerified" BOOLEAN DEFAULT false,
    "refreshToken" TEXT,
    "refreshTokenExpires" DATETIME
);

-- CreateTable
CREATE TABLE "Connection" (
    "shopId" TEXT NOT NULL PRIMARY KEY,
    "status" TEXT NOT NULL,
    "workspaceId" TEXT NOT NULL,
    "workspaceName" TEXT NOT NULL,
    "apiKeyEnc" TEXT NOT NULL,
    "keyHint" TEXT NOT NULL,
    "connectedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastCheckedAt" DATETIME,
    "lastError" TEXT,
    "lastErrorAt" DATETIME,
    "lastDeliveredAt" DATETIME,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "Connection_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "ShopSettings" (
    "shopId" TEXT NOT NULL PRIMARY KEY,
    "data" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "ShopSettings_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "WebhookReceipt" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "webhookId" TEXT NOT NULL,
    "shopDomain" TEXT NOT NULL,
    "topic" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "reason" TEXT,
    "messageCount" INTEGER NOT NULL DEFAULT 0,
    "customerId" TEXT,
    "receivedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "OutboxMessage" (
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
    "lockedBy" TEXT,
    "lockedUntil" DATETIME,
    "lastError" TEXT,
    "lastStatus" INTEGER,
    "latencyMs" INTEGER,
    "backfillId" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deliveredAt" DATETIME,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "OutboxMessage_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "DeliveryAttempt" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "messageId" INTEGER NOT NULL,
    "attempt" INTEGER NOT NULL,
    "startedAt" DATETIME NOT NULL,
    "durationMs" INTEGER NOT NULL,
    "statusCode" INTEGER,
    "outcome" TEXT NOT NULL,
    "error" TEXT,
    CONSTRAINT "DeliveryAttempt_messageId_fkey" FOREIGN KEY ("messageId") REFERENCES "OutboxMessage" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "CustomerDigest" (
    "shopId" TEXT NOT NULL,
    "customerId" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "consentState" TEXT,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("shopId", "customerId"),
    CONSTRAINT "CustomerDigest_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "WorkspacePacer" (
    "workspaceId" TEXT NOT NULL PRIMARY KEY,
    "limitPerSec" INTEGER NOT NULL DEFAULT 10,
    "nextSlotAt" BIGINT NOT NULL DEFAULT 0,
    "lastRemaining" INTEGER,
    "pausedUntil" DATETIME,
    "pauseReason" TEXT,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "DataExport" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "shopId" TEXT NOT NULL,
    "requestId" TEXT NOT NULL,
    "customerId" TEXT,
    "content" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "DataExport_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Backfill" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "shopId" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "kinds" TEXT NOT NULL,
    "since" DATETIME,
    "progress" TEXT NOT NULL DEFAULT '{}',
    "processed" INTEGER NOT NULL DEFAULT 0,
    "total" INTEGER,
    "queued" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "lockedBy" TEXT,
    "lockedUntil" DATETIME,
    "startedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" DATETIME,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "Backfill_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE UNIQUE INDEX "Shop_domain_key" ON "Shop"("domain");

-- CreateIndex
CREATE INDEX "Session_shop_idx" ON "Session"("shop");

-- CreateIndex
CREATE INDEX "Connection_workspaceId_idx" ON "Connection"("workspaceId");

-- CreateIndex
CREATE UNIQUE INDEX "WebhookReceipt_webhookId_key" ON "WebhookReceipt"("webhookId");

-- CreateIndex
CREATE INDEX "WebhookReceipt_shopDomain_receivedAt_idx" ON "WebhookReceipt"("shopDomain", "receivedAt");

-- CreateIndex
CREATE INDEX "WebhookReceipt_shopDomain_customerId_idx" ON "WebhookReceipt"("shopDomain", "customerId");

-- CreateIndex
CREATE INDEX "OutboxMessage_status_shopId_lane_runAt_idx" ON "OutboxMessage"("status", "shopId", "lane", "runAt");

-- CreateIndex
CREATE INDEX "OutboxMessage_status_runAt_idx" ON "OutboxMessage"("status", "runAt");

-- CreateIndex
CREATE INDEX "OutboxMessage_status_lockedUntil_idx" ON "OutboxMessage"("status", "lockedUntil");

-- CreateIndex
CREATE INDEX "OutboxMessage_shopId_checkoutToken_idx" ON "OutboxMessage"("shopId", "checkoutToken");

-- CreateIndex
CREATE INDEX "OutboxMessage_shopId_email_idx" ON "OutboxMessage"("shopId", "email");

-- CreateIndex
CREATE INDEX "OutboxMessage_shopId_customerId_idx" ON "OutboxMessage"("shopId", "customerId");

-- CreateIndex
CREATE INDEX "OutboxMessage_shopId_orderId_idx" ON "OutboxMessage"("shopId", "orderId");

-- CreateIndex
CREATE INDEX "OutboxMessage_shopId_status_deliveredAt_idx" ON "OutboxMessage"("shopId", "status", "deliveredAt");

-- CreateIndex
CREATE INDEX "OutboxMessage_shopId_id_idx" ON "OutboxMessage"("shopId", "id");

-- CreateIndex
CREATE INDEX "OutboxMessage_backfillId_idx" ON "OutboxMessage"("backfillId");

-- CreateIndex
CREATE UNIQUE INDEX "OutboxMessage_shopId_sourceId_key" ON "OutboxMessage"("shopId", "sourceId");

-- CreateIndex
CREATE INDEX "DeliveryAttempt_messageId_idx" ON "DeliveryAttempt"("messageId");

-- CreateIndex
CREATE INDEX "DataExport_shopId_customerId_idx" ON "DataExport"("shopId", "customerId");

-- CreateIndex
CREATE UNIQUE INDEX "DataExport_shopId_requestId_key" ON "DataExport"("shopId", "requestId");

-- CreateIndex
CREATE INDEX "Backfill_shopId_state_idx" ON "Backfill"("shopId", "state");

