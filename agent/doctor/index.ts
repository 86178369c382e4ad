export { doctorChecks, type DoctorCheck, type OfflineFacts } from "./doctor-checks.js";
