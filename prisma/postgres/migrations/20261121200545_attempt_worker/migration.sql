-- AlterTable
ALTER TABLE "DeliveryAttempt" ADD COLUMN     "workerId" TEXT;

