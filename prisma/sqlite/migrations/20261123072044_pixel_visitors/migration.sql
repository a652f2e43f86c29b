-- CreateTable
CREATE TABLE "PixelVisitor" (
    "shopId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "identifiedAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL,

    PRIMARY KEY ("shopId", "clientId"),
    CONSTRAINT "PixelVisitor_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "PixelEvent" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "shopId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "occurredAt" DATETIME NOT NULL,
    "data" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    CONSTRAINT "PixelEvent_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "PixelVisitor_shopId_email_idx" ON "PixelVisitor"("shopId", "email");

-- CreateIndex
CREATE INDEX "PixelVisitor_expiresAt_idx" ON "PixelVisitor"("expiresAt");

-- CreateIndex
CREATE INDEX "PixelEvent_shopId_clientId_id_idx" ON "PixelEvent"("shopId", "clientId", "id");

-- CreateIndex
CREATE INDEX "PixelEvent_expiresAt_idx" ON "PixelEvent"("expiresAt");

