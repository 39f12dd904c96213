#include "sync/serving.h"

LOCUS_TLS struct serving_frame *sync_serving;
