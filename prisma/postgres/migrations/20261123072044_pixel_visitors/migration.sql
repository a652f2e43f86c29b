-- CreateTable
CREATE TABLE "PixelVisitor" (
    "shopId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "identifiedAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PixelVisitor_pkey" PRIMARY KEY ("shopId","clientId")
);

-- CreateTable
CREATE TABLE "PixelEvent" (
    "id" SERIAL NOT NULL,
    "shopId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "eventId" TEXT NOT NULL,
    "occurredAt" TIMESTAMP(3) NOT NULL,
    "data" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PixelEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "PixelVisitor_shopId_email_idx" ON "PixelVisitor"("shopId", "email");

-- CreateIndex
CREATE INDEX "PixelVisitor_expiresAt_idx" ON "PixelVisitor"("expiresAt");

-- CreateIndex
CREATE INDEX "PixelEvent_shopId_clientId_id_idx" ON "PixelEvent"("shopId", "clientId", "id");

-- CreateIndex
CREATE INDEX "PixelEvent_expiresAt_idx" ON "PixelEvent"("expiresAt");

-- AddForeignKey
ALTER TABLE "PixelVisitor" ADD CONSTRAINT "PixelVisitor_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PixelEvent" ADD CONSTRAINT "PixelEvent_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;

