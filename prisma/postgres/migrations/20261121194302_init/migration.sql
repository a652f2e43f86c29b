-- CreateTable
CREATE TABLE "Shop" (
    "id" TEXT NOT NULL,
    "domain" TEXT NOT NULL,
    "shopifyId" TEXT,
    "name" TEXT,
    "tokenStatus" TEXT NOT NULL DEFAULT 'none',
    "tokenError" TEXT,
    "installedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "uninstalledAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Shop_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Session" (
    "id" TEXT NOT NULL,
    "shop" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "isOnline" BOOLEAN NOT NULL DEFAULT false,
    "scope" TEXT,
    "expires" TIMESTAMP(3),
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
    "refreshTokenExpires" TIMESTAMP(3),

    CONSTRAINT "Session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Connection" (
    "shopId" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "workspaceId" TEXT NOT NULL,
    "workspaceName" TEXT NOT NULL,
    "apiKeyEnc" TEXT NOT NULL,
    "keyHint" TEXT NOT NULL,
    "connectedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastCheckedAt" TIMESTAMP(3),
    "lastError" TEXT,
    "lastErrorAt" TIMESTAMP(3),
    "lastDeliveredAt" TIMESTAMP(3),
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Connection_pkey" PRIMARY KEY ("shopId")
);

-- CreateTable
CREATE TABLE "ShopSettings" (
    "shopId" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ShopSettings_pkey" PRIMARY KEY ("shopId")
);

-- CreateTable
CREATE TABLE "WebhookReceipt" (
    "id" SERIAL NOT NULL,
    "webhookId" TEXT NOT NULL,
    "shopDomain" TEXT NOT NULL,
    "topic" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "reason" TEXT,
    "messageCount" INTEGER NOT NULL DEFAULT 0,
    "customerId" TEXT,
    "receivedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "WebhookReceipt_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "OutboxMessage" (
    "id" SERIAL NOT NULL,
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
    "runAt" TIMESTAMP(3) NOT NULL,
    "dueAt" TIMESTAMP(3) NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "lockedBy" TEXT,
    "lockedUntil" TIMESTAMP(3),
    "lastError" TEXT,
    "lastStatus" INTEGER,
    "latencyMs" INTEGER,
    "backfillId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deliveredAt" TIMESTAMP(3),
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "OutboxMessage_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DeliveryAttempt" (
    "id" SERIAL NOT NULL,
    "messageId" INTEGER NOT NULL,
    "attempt" INTEGER NOT NULL,
    "startedAt" TIMESTAMP(3) NOT NULL,
    "durationMs" INTEGER NOT NULL,
    "statusCode" INTEGER,
    "outcome" TEXT NOT NULL,
    "error" TEXT,

    CONSTRAINT "DeliveryAttempt_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "CustomerDigest" (
    "shopId" TEXT NOT NULL,
    "customerId" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "consentState" TEXT,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "CustomerDigest_pkey" PRIMARY KEY ("shopId","customerId")
);

-- CreateTable
CREATE TABLE "WorkspacePacer" (
    "workspaceId" TEXT NOT NULL,
    "limitPerSec" INTEGER NOT NULL DEFAULT 10,
    "nextSlotAt" BIGINT NOT NULL DEFAULT 0,
    "lastRemaining" INTEGER,
    "pausedUntil" TIMESTAMP(3),
    "pauseReason" TEXT,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "WorkspacePacer_pkey" PRIMARY KEY ("workspaceId")
);

-- CreateTable
CREATE TABLE "DataExport" (
    "id" SERIAL NOT NULL,
    "shopId" TEXT NOT NULL,
    "requestId" TEXT NOT NULL,
    "customerId" TEXT,
    "content" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DataExport_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Backfill" (
    "id" TEXT NOT NULL,
    "shopId" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "kinds" TEXT NOT NULL,
    "since" TIMESTAMP(3),
    "progress" TEXT NOT NULL DEFAULT '{}',
    "processed" INTEGER NOT NULL DEFAULT 0,
    "total" INTEGER,
    "queued" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "lockedBy" TEXT,
    "lockedUntil" TIMESTAMP(3),
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMP(3),
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Backfill_pkey" PRIMARY KEY ("id")
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

-- AddForeignKey
ALTER TABLE "Connection" ADD CONSTRAINT "Connection_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ShopSettings" ADD CONSTRAINT "ShopSettings_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "OutboxMessage" ADD CONSTRAINT "OutboxMessage_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeliveryAttempt" ADD CONSTRAINT "DeliveryAttempt_messageId_fkey" FOREIGN KEY ("messageId") REFERENCES "OutboxMessage"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "CustomerDigest" ADD CONSTRAINT "CustomerDigest_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DataExport" ADD CONSTRAINT "DataExport_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Backfill" ADD CONSTRAINT "Backfill_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

